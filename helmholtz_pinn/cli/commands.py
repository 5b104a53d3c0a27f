"""The commands of ``helmholtz-pinn simulate | invert | baseline | convert | cohort``.

The commands only map arguments onto library calls (``invert`` is
``helmholtz_pinn.fit.inversion.invert`` and nothing else); the parser is
``helmholtz_pinn.cli.parser``. The package's own errors print one line
``helmholtz-pinn CMD: error: ...`` in the command line's words (``steps=`` becomes
``--steps``) and exit 2; a divergence exits 3; SIGINT (Ctrl-C) and SIGTERM print one line
and exit 130 and 143 (a fit first writes a final checkpoint); ``--debug`` shows the
traceback. JAX is imported only by the commands that fit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import time
import warnings
from pathlib import Path

from helmholtz_pinn.cli.parser import (
    ELASTIC_OPTIONS,
    EXIT_DIVERGED,
    EXIT_USAGE,
    build_parser,
    config_from,
    parse_args,
)
from helmholtz_pinn.errors import ConfigError, HelmholtzPinnError, Interrupted, OutputError

FINISHED = ("mu.npz", "metrics.json")  # a folder holding one of these holds a finished result


def _load_or_phantom(path: Path | None):
    """The dataset at ``path``, or the built-in four-target phantom (its simulator, and
    SciPy's sparse solvers, imported only then)."""
    from helmholtz_pinn.io import dataset as data

    if path is not None:
        return data.load(path)
    from helmholtz_pinn.forward import phantoms

    print("no DATA given: simulating the built-in four-target phantom", file=sys.stderr)
    return phantoms.simulate_phantom("four-target")


def _check_new_dataset(out: Path, args) -> None:
    """An existing dataset file is replaced only with --overwrite: refused before the
    work (and again when written, should another command write it meanwhile)."""
    if args.overwrite:
        return
    if out.exists() or out.is_symlink():
        raise OutputError(f"{out} already exists: pass --overwrite to replace it")


def _write_dataset(dataset, out: Path, overwrite: bool = False) -> None:
    """Save a dataset .npz (creating its folder) and say what was written."""
    from helmholtz_pinn.io import dataset as data
    from helmholtz_pinn.report import files

    files.prepare_dir(out.parent)
    data.save(dataset, out, overwrite=overwrite)
    freqs, spacing = dataset.frequency.tolist(), dataset.spacing.tolist()
    print(f"wrote {out}: u {dataset.u.shape}, frequencies {freqs} Hz, spacing {spacing} m")


def cmd_simulate(args) -> int:
    from helmholtz_pinn.forward import phantoms

    _check_new_dataset(args.out, args)
    options = _elastic_options(args)  # checked against --physics
    if args.physics == "elastic":
        dataset = _simulate_elastic(args, options)
    else:
        dataset = phantoms.simulate_phantom(
            args.phantom or "four-target",
            noise_db=args.noise_db,
            seed=args.seed,
            frequencies=args.frequencies,
            components=args.components,
            nz=args.nz,
        )
    _write_dataset(dataset, args.out, args.overwrite)
    return 0


def _elastic_options(args) -> dict:
    """The elastic options given ({name: value}); an option of the other physics (elastic
    under scalar, ``--phantom`` or ``--components`` under elastic) is a ConfigError."""
    options = {k: getattr(args, k) for k in ELASTIC_OPTIONS if getattr(args, k) is not None}
    scalar = [f for f in ("--phantom", "--components", "--nz") if getattr(args, f[2:]) is not None]
    if args.physics == "scalar" and options:
        flags = ", ".join("--" + k.replace("_", "-") for k in options)
        raise ConfigError(f"{flags} apply to --physics elastic only")
    if args.physics == "elastic" and scalar:
        raise ConfigError(
            f"{', '.join(scalar)} apply to --physics scalar only; the elastic phantom has 3 "
            "components and its geometry is --layout"
        )
    return options


def _simulate_elastic(args, options: dict):
    """The elastic phantom of the parsed ``args`` and the given ``options`` (a Dataset)."""
    from helmholtz_pinn.forward import elastic

    if {"mesh_size", "elements_per_wavelength"} <= options.keys():
        raise ConfigError("give --mesh-size or --elements-per-wavelength, not both")
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    if args.frequencies:
        kwargs["frequencies"] = args.frequencies
    print(
        "solving the elastic phantom by finite elements (minutes at the default size; "
        "Ctrl-C stops it at once, nothing is written before the end) ...",
        file=sys.stderr,
    )
    try:
        with _signals_stop_at_once():
            return elastic.simulate_elastic(
                noise_db=args.noise_db, seed=args.seed, log=_progress_line, **kwargs
            )
    except ValueError as err:  # an argument check of simulate_elastic
        raise ConfigError(f"--physics elastic: {err}") from None


def _progress_line(line: str) -> None:
    print(f"  {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _signals_stop_at_once():
    """SIGINT and SIGTERM end the process at once (their default action) inside a long
    compiled call, such as the sparse FEM solve, where a Python handler would only run
    once the call returns; nothing is lost, since nothing has been written."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _finished(out: Path) -> list[str]:
    """The files of a finished result in ``out`` (or a batch's ``OUT/<stem>/``), or of
    one that a stopped swap left half-moved (its stage's list: the next command finishes
    moving it in)."""
    held = [name for name in (*FINISHED, ".writing/complete.json") if (out / name).exists()]
    if out.is_dir() and not held:  # a batch writes OUT/<stem>/
        held = [f"{d.name}/{n}" for d in out.iterdir() if d.is_dir() for n in FINISHED
                if (d / n).exists()]  # fmt: skip
    return held


def _check_not_overwriting(out: Path, args) -> None:
    """A folder holding a finished result, or an earlier run's checkpoints (which a fresh
    fit deletes once it has its own), is replaced only with --overwrite (or continued
    with --resume)."""
    if args.overwrite or getattr(args, "resume", False) or getattr(args, "resume_strict", False):
        return
    held = _finished(out)
    if held:
        resume = "--resume to continue its run, " if hasattr(args, "resume") else ""
        raise OutputError(
            f"{out} already holds a result ({held[0]}): pass --overwrite to replace it, "
            f"{resume}or choose another --out"
        )
    from helmholtz_pinn.report import files

    steps = files.checkpoint_steps(out) if args.command == "invert" else []
    if steps:
        raise OutputError(
            f"{out} holds an earlier run's checkpoints ({steps[0]}): pass --resume to "
            "continue that run, --overwrite to start afresh (they are deleted once the new "
            "run has its first checkpoint), or choose another --out"
        )


def _check_output(args, paths: list) -> None:
    """Files in the way of the results and names that cannot be written, found before
    any work (:func:`helmholtz_pinn.report.files.check_output`), in OUT and in each
    ``OUT/<stem>/`` of a batch; an unwritable --tensorboard folder too."""
    from helmholtz_pinn.report import files

    nifti, saves = getattr(args, "nifti", False), not getattr(args, "no_checkpoints", True)
    files.check_output(args.out, nifti=nifti, checkpoints=saves)
    if len(paths) > 1:
        for folder in files.result_dirs(args.out, paths):
            if folder.exists() and not folder.is_dir():
                raise OutputError(
                    f"{folder} is a file, but the batch writes its result folder there: move "
                    "it away or choose another --out"
                )
            files.check_output(folder, nifti=nifti)
    if getattr(args, "tensorboard", None):
        files.check_output(args.tensorboard)


def cmd_invert(args) -> int:
    from helmholtz_pinn.errors import InputError
    from helmholtz_pinn.report.folder_lock import LOCK_NAME, FolderLock

    _check_not_overwriting(args.out, args)
    paths = args.data or [None]
    _check_output(args, paths)
    if args.slicewise and len(paths) != 1:
        raise ConfigError(f"--slicewise takes one 3-D DATA file; got {len(paths)}")
    datasets = [_load_or_phantom(p) for p in paths]  # before JAX: input errors answer at once
    fresh, lead = not args.out.exists(), _lead_process(args)
    lock = FolderLock(args.out) if lead else contextlib.nullcontext()
    try:
        with lock:
            if lead:  # the folder's writer: first a result a killed run left half-moved
                _finish_swaps(args.out)
            return _invert(args, datasets, paths)
    except InputError as err:  # refused at the door (plausibility): leave no output folder
        if fresh:
            (args.out / LOCK_NAME).unlink(missing_ok=True)
            if not any(args.out.iterdir()):
                args.out.rmdir()
        named = str(err)
        for i, path in enumerate(paths):  # a batch's datasets[i] is a file here
            named = named.replace(f"datasets[{i}]:", f"{path}:")
        if named == str(err):
            raise
        raise type(err)(named) from None


def _finish_swaps(out: Path) -> None:
    """Finish the result that a killed run was moving into ``out`` (or ``OUT/<stem>/``), or
    remove the one it was still writing (:func:`helmholtz_pinn.report.files.finish_swaps`),
    with one note each; run once the folder lock is held."""
    from helmholtz_pinn.report import files

    for note in files.finish_swaps(out):
        print(f"note: {note}", file=sys.stderr)


def _lead_process(args) -> bool:
    """Whether this process leads a launch over many processes (or runs alone): the one
    that holds the output folder and writes the results."""
    env = os.environ
    ranks = (args.process_id, env.get("JAX_PROCESS_ID"), env.get("SLURM_PROCID"),
             env.get("OMPI_COMM_WORLD_RANK"))  # fmt: skip
    return all(rank is None or int(rank) == 0 for rank in ranks)


def _invert(args, datasets: list, paths: list) -> int:
    import jax

    from helmholtz_pinn.errors import CheckpointError, DivergenceError
    from helmholtz_pinn.fit import inversion, placement
    from helmholtz_pinn.fit.checkpoints import NO_CHECKPOINT
    from helmholtz_pinn.io import dataset as data
    from helmholtz_pinn.report import files, logs

    # many processes (docs/scaling.md): flags, environment or Slurm; else a no-op
    placement.initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    writer = jax.process_index() == 0  # every process fits; process 0 alone writes results
    cfg = config_from(args, datasets[0].n_comp)
    files.prepare_dir(args.out)
    if paths == [None] and writer:
        data.save(datasets[0], args.out / "phantom.npz")
    _compile_cache(args.cache_dir)
    if args.tensorboard and writer:
        files.prepare_dir(args.tensorboard)
    board = logs.TensorBoardLogger(args.tensorboard) if args.tensorboard and writer else None
    resume = "strict" if args.resume_strict else args.resume
    held = _finished(args.out) if resume is True else []
    on_device = writer and jax.default_backend() != "cpu"  # a CPU's cores are training
    importing = _import_in_background(FIGURE_MODULES) if on_device else None
    try:
        results = inversion.invert(
            datasets[0] if len(datasets) == 1 else datasets,
            cfg,
            slicewise=bool(args.slicewise),
            devices=args.devices,
            progress=not args.no_progress and writer,
            callback=board,
            checkpoint_dir=None if args.no_checkpoints else args.out / "checkpoints",
            resume="strict" if held else resume,  # finding none must not replace a result
            force=args.force,
            drop_empty_components=args.drop_empty_components,
            seed=args.seed,
        )
        if board is not None:
            for result in results if isinstance(results, list) else [results]:
                board.log_result(result)
    except CheckpointError as err:
        if held and str(err).startswith(NO_CHECKPOINT):
            where = str(err).split(": resume=")[0]
            raise CheckpointError(
                f"{args.out} holds a finished result ({held[0]}) and {where}: --resume "
                "continues a run and never replaces a result; pass --overwrite (without "
                "--resume) to fit afresh, or choose another --out"
            ) from None
        raise
    except DivergenceError as err:
        if writer:
            files.clear_results(args.out)  # an earlier run's mu.npz must not look like ours
            files.write_json(args.out / "failure.json", {"error": str(err)})
        where = f"no result written; see {args.out / 'failure.json'}"
        print(f"helmholtz-pinn invert: error: {cli_voice(str(err))} ({where})", file=sys.stderr)
        return EXIT_DIVERGED
    finally:
        if board is not None:
            board.close()
    if isinstance(results, list):
        dirs = files.result_dirs(args.out, paths)
    else:
        results, dirs = [results], [args.out]
    if writer:
        if importing is not None:  # no import of one module in two threads at once
            importing.join()
        for result, out, path in zip(results, dirs, paths, strict=True):
            result.metrics["input"] = str(path or "built-in four-target phantom")
            result.save(out, nifti=args.nifti)
            _summary(result, out)
    return 0


FIGURE_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg")


def _import_in_background(modules: tuple[str, ...]):
    """Import ``modules`` in a daemon thread, which is returned: during a fit on a GPU,
    whose main thread waits on the device, instead of after it (matplotlib for the figures
    takes about 0.3 s). A module that fails to import is left for its user to report."""
    import importlib
    import threading

    def load():
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=load, name="import figures", daemon=True)
    thread.start()
    return thread


def _compile_cache(path: Path | None) -> None:
    """The persistent compilation cache in ``path``; where the default folder cannot be
    written (a read-only HOME) a note, and the run goes on without the cache."""
    from helmholtz_pinn.fit.compile_cache import enable_compilation_cache

    try:
        enable_compilation_cache(path)
    except OutputError as err:
        if path is not None:
            raise
        print(
            f"note: {err}; running without it (--cache-dir DIR gives it a folder)", file=sys.stderr
        )


def cmd_baseline(args) -> int:
    from helmholtz_pinn.assess import input_checks
    from helmholtz_pinn.fit import admission
    from helmholtz_pinn.io import dataset as data
    from helmholtz_pinn.report import result
    from helmholtz_pinn.report.folder_lock import FolderLock

    _check_not_overwriting(args.out, args)
    _check_output(args, [args.data])
    dataset = data.load(args.data)  # refused input leaves no output folder
    admission.check_baseline_fits(dataset)  # as invert: refused before the work
    notes = input_checks.check(data.unit_amplitude(dataset)[0], force=args.force)
    keys = ("smoothing", "sigma", "sigma_mm", "window")
    with FolderLock(args.out):
        _finish_swaps(args.out)
        res = result.baseline_result(
            dataset, args.method, margin=args.metric_margin, **{k: getattr(args, k) for k in keys}
        )
        res.metrics["notes"] = res.metrics.get("notes", []) + notes
        res.metrics["input"] = str(args.data)
        res.save(args.out)
    _summary(res, args.out)
    return 0


def _summary(result, out: Path) -> None:
    """What the command made: the files, the map and one verdict
    (:func:`helmholtz_pinn.report.summary.summary`, with the whole command's wall time),
    the law, the notes, and each failed fit check as a warning on stderr (what to try)."""
    from helmholtz_pinn.report.summary import summary

    facts = result.metrics
    misfit = (
        " (misfit.png: where the fitted wave misses the data)" if "wave_misfit" in facts else ""
    )
    print(f"wrote {out}/: mu.npz (Pa), metrics.json, figures{misfit}")
    seconds = time.perf_counter() - _STARTED[0]
    text, _, verdict = summary(result, wall_time_s=seconds, advice=False).partition("\nverdict:")
    print(cli_voice(text))
    line = _law_line(facts)
    if line:
        print(cli_voice(line))
    for note in facts.get("notes", []):
        print(f"note: {cli_voice(note)}")
    if verdict:  # last: what to make of it all
        print(cli_voice(f"verdict:{verdict}"))
    sys.stdout.flush()  # the summary before the warnings where both go to one terminal
    for c in facts.get("fit_quality", []):  # the exit status stays 0
        if not c["passed"]:
            message = cli_voice(c["message"])
            print(f"warning: {out}: fit quality: {c['name']}: {message}", file=sys.stderr)


def _law_line(facts: dict) -> str | None:
    """What the fit says of the law: the auto choice, or what the medians of the fitted
    law's maps say of the tissue (:attr:`helmholtz_pinn.laws.Law.describe`); else None."""
    from helmholtz_pinn import laws

    law = facts.get("law") or {}
    if law.get("line") or law.get("chosen_by"):
        return law.get("line") or f"law: {law['mu_model']} ({law['chosen_by']})"
    model = (facts.get("clinical") or {}).get("model") or {}
    name, median = model.get("name"), model.get("mask") or {}
    fitted = laws.get(name) if name in laws.available() else None
    if fitted is None or fitted.describe is None:
        return None
    if any(median.get(k) is None for k in fitted.maps):
        return None
    return f"law: {name}, {fitted.describe(median)}"


def cli_voice(message: str) -> str:
    """A library message in the command line's words: a keyword that is also an option
    becomes that option (``steps=`` -> ``--steps``, ``force=True`` -> ``--force``,
    ``ensemble=3`` -> ``--ensemble 3``, ``resume='strict'`` -> ``--resume-strict``)."""
    options = _option_strings()
    message = message.replace("resume='strict'", "--resume-strict")

    def flag(match: re.Match) -> str:
        option = "--" + match[1].replace("_", "-")
        if option not in options:
            return match[0]
        value = match[2]
        return option if value in ("", "True") else f"{option} {value}"

    return re.sub(r"(?<![\w.'-])([a-z][a-z_]*)=(True\b|[^\s,;)]*)", flag, message)


@functools.lru_cache(maxsize=1)
def _option_strings() -> frozenset[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    return frozenset(o for p in commands.values() for a in p._actions for o in a.option_strings)


def cmd_convert(args) -> int:
    from helmholtz_pinn.io.convert import convert

    keys = ("kind", "variable", "axes", "frequency", "spacing", "spacing_unit", "phase", "preset")
    mask_from = "magnitude" if args.mask_from_magnitude else None
    _check_new_dataset(args.out, args)
    dataset = convert(args.inputs, mask_from=mask_from, **{k: getattr(args, k) for k in keys})
    _write_dataset(dataset, args.out, args.overwrite)
    return 0


def cmd_cohort(args) -> int:
    """``helmholtz_pinn.fit.cohort.run_cohort``; exit 1 when a file failed (its row says
    why)."""
    from helmholtz_pinn.fit.cohort import run_cohort, table_name

    cache = args.cache_dir
    if cache is None:
        from helmholtz_pinn.fit.compile_cache import DEFAULT_DIR as cache
    rows = run_cohort(
        args.data,
        args.out,
        config_from(args),  # --seed is a Config field
        shard=args.shard,
        workers=args.workers,
        nifti=args.nifti,
        force=args.force,
        drop_empty_components=args.drop_empty_components,
        checkpoints=not args.no_checkpoints,
        cache_dir=cache,
        progress=not args.no_progress,
    )
    failed = {r["file"] for r in rows if r["status"] == "failed"}
    if failed:
        table = args.out / table_name(args.shard)
        print(f"helmholtz-pinn cohort: {len(failed)} file(s) failed; see {table}", file=sys.stderr)
        return 1
    return 0


COMMANDS = dict(
    simulate=cmd_simulate,
    invert=cmd_invert,
    baseline=cmd_baseline,
    convert=cmd_convert,
    cohort=cmd_cohort,
)


_STARTED = [time.perf_counter()]  # when the command began: the summary's wall time


def main(argv: list[str] | None = None) -> int:
    _STARTED[0] = time.perf_counter()
    args = parse_args(argv)
    _matplotlib_config()
    from helmholtz_pinn.assess.fit_checks import FitQualityWarning

    try:
        with warnings.catch_warnings(), _sigterm_as_interrupt():
            warnings.simplefilter("ignore", FitQualityWarning)  # _summary prints them once
            return COMMANDS[args.command](args)
    except (Interrupted, KeyboardInterrupt) as err:  # one line, 130 (SIGINT) or 143 (SIGTERM)
        if args.debug:
            raise
        said = str(err) or "interrupted (SIGINT) outside a training block: nothing new saved"
        print(f"helmholtz-pinn {args.command}: {cli_voice(said)}", file=sys.stderr)
        return getattr(err, "exit_status", 130)
    except HelmholtzPinnError as err:
        if args.debug:
            raise
        print(f"helmholtz-pinn {args.command}: error: {cli_voice(str(err))}", file=sys.stderr)
        return EXIT_USAGE


def _matplotlib_config() -> None:
    """Where matplotlib's configuration folder (``~/.config/matplotlib``) cannot be
    written (a read-only HOME), a temporary one, deleted at exit: what matplotlib does
    itself, without its two warning lines on the terminal."""
    import atexit
    import shutil
    import tempfile

    if "MPLCONFIGDIR" in os.environ:
        return
    try:
        config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        (config / "matplotlib").mkdir(parents=True, exist_ok=True)
        if os.access(config / "matplotlib", os.W_OK):
            return
    except (OSError, RuntimeError):  # RuntimeError: no home folder known
        pass
    folder = tempfile.mkdtemp(prefix="matplotlib-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = folder


class _Terminated(Interrupted):
    """SIGTERM outside a training block (inside one the host loop stops after it)."""


def _sigterm_as_interrupt():
    """SIGTERM raises Interrupted (exit 143) where no training block is running; the host
    loop installs its own handler while it trains, so a fit ends with its checkpoint."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return contextlib.nullcontext()

    def raise_interrupted(signum, frame):
        raise _Terminated(
            "interrupted (SIGTERM) outside a training block: nothing new saved",
            signal_name="SIGTERM",
        )

    @contextlib.contextmanager
    def handler():
        previous = signal.signal(signal.SIGTERM, raise_interrupted)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    return handler()


if __name__ == "__main__":
    sys.exit(main())
