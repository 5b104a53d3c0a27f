"""Command line: ``helmholtz-pinn simulate | invert | baseline | convert``.

The commands only map arguments onto library calls (``invert`` is
:func:`helmholtz_pinn.fit.inversion.invert` and nothing else); the parser is
:mod:`helmholtz_pinn.cli.parser`. The package's own errors (:mod:`helmholtz_pinn.errors`)
print one line ``helmholtz-pinn CMD: error: ...`` and exit 2; a divergence exits 3;
Ctrl-C (SIGINT) prints one line and exits 130 (a fit first writes a final checkpoint)
(``--debug``: the traceback). JAX is imported only by the commands.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from helmholtz_pinn.cli import elastic_options as elastic_cli
from helmholtz_pinn.cli.parser import (  # noqa: F401 (build_parser: the docs and tests use it)
    EXIT_DIVERGED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    build_parser,
    config_from,
    parse_args,
)


def _load_or_phantom(path: Path | None, out: Path, save: bool = True):
    """The dataset at ``path``, or the built-in phantom (saved into ``out`` if ``save``)."""
    from helmholtz_pinn.forward import phantoms
    from helmholtz_pinn.io import dataset as data

    if path is not None:
        return data.load(path)
    print("no DATA given: simulating the built-in four-target phantom", file=sys.stderr)
    dataset = phantoms.simulate_phantom("four-target")
    if save:
        out.mkdir(parents=True, exist_ok=True)
        data.save(dataset, out / "phantom.npz")
    return dataset


def _write_dataset(dataset, out: Path) -> None:
    """Save a dataset .npz (creating its folder) and say what was written."""
    from helmholtz_pinn.io import dataset as data
    from helmholtz_pinn.report import files

    files.prepare_dir(out.parent)
    data.save(dataset, out)
    freqs, spacing = dataset.frequency.tolist(), dataset.spacing.tolist()
    print(f"wrote {out}: u {dataset.u.shape}, frequencies {freqs} Hz, spacing {spacing} m")


def cmd_simulate(args) -> int:
    from helmholtz_pinn.forward import phantoms

    options = elastic_cli.given(args)  # checked against --physics
    if args.physics == "elastic":
        dataset = elastic_cli.simulate(args, options)
    else:
        dataset = phantoms.simulate_phantom(
            args.phantom or "four-target",
            noise_db=args.noise_db,
            seed=args.seed,
            frequencies=args.frequencies,
            components=args.components,
            nz=args.nz,
        )
    _write_dataset(dataset, args.out)
    return 0


def cmd_invert(args) -> int:
    import jax

    from helmholtz_pinn.errors import ConfigError, DivergenceError, InputError
    from helmholtz_pinn.fit import inversion, placement
    from helmholtz_pinn.fit.compile_cache import enable_compilation_cache
    from helmholtz_pinn.report import files, logs

    # many processes (docs/scaling.md): flags, environment or Slurm; else a no-op
    placement.initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    writer = jax.process_index() == 0  # every process fits; process 0 alone writes results
    cfg = config_from(args).replace(seed=args.seed)
    paths = args.data or [None]
    if args.slicewise and len(paths) != 1:
        raise ConfigError(f"--slicewise takes one 3-D DATA file; got {len(paths)}")
    fresh = not args.out.exists()
    datasets = [_load_or_phantom(p, args.out, save=writer) for p in paths]
    files.prepare_dir(args.out)
    enable_compilation_cache(args.cache_dir)
    board = logs.TensorBoardLogger(args.tensorboard) if args.tensorboard and writer else None
    try:
        results = inversion.invert(
            datasets[0] if len(datasets) == 1 else datasets,
            cfg,
            slicewise=bool(args.slicewise),
            devices=args.devices,
            progress=not args.no_progress and writer,
            callback=board,
            checkpoint_dir=None if args.no_checkpoints else args.out / "checkpoints",
            resume="strict" if args.resume_strict else args.resume,
            force=args.force,
            drop_empty_components=args.drop_empty_components,
        )
        if board is not None:
            for result in results if isinstance(results, list) else [results]:
                board.log_result(result)
    except InputError:  # refused at the door (plausibility): leave no output folder
        if fresh and not any(args.out.iterdir()):
            args.out.rmdir()
        raise
    except DivergenceError as err:
        if writer:
            files.clear_results(args.out)  # an earlier run's mu.npz must not look like ours
            files.write_json(args.out / "failure.json", {"error": str(err)})
        where = f"no result written; see {args.out / 'failure.json'}"
        print(f"helmholtz-pinn invert: error: {err} ({where})", file=sys.stderr)
        return EXIT_DIVERGED
    finally:
        if board is not None:
            board.close()
    if isinstance(results, list):
        dirs = files.result_dirs(args.out, paths)
    else:
        results, dirs = [results], [args.out]
    if writer:
        for result, out in zip(results, dirs, strict=True):
            result.save(out, nifti=args.nifti)
            _summary(result.metrics, out)
    return 0


def cmd_baseline(args) -> int:
    from helmholtz_pinn.assess import input_checks
    from helmholtz_pinn.io import dataset as data
    from helmholtz_pinn.report import result

    dataset = data.load(args.data)
    notes = input_checks.check(dataset, force=args.force)
    keys = ("smoothing", "sigma", "sigma_mm", "window")
    res = result.baseline_result(
        dataset,
        args.method,
        margin=args.metric_margin,
        **{k: getattr(args, k) for k in keys},
    )
    res.metrics["notes"] = res.metrics.get("notes", []) + notes
    res.save(args.out)
    _summary(res.metrics, args.out)
    return 0


def _summary(facts: dict, out: Path) -> None:
    keys = ("steps", "wall_time_s", "median_rel_error_storage", "pearson_r_storage")
    shown = ", ".join(f"{k}={facts[k]:.4g}" for k in keys if isinstance(facts.get(k), float))
    print(f"wrote {out}/: mu.npz (Pa), metrics.json, figures. {shown}")
    for note in facts.get("notes", []):
        print(f"note: {note}")
    for c in facts.get("fit_quality", []):  # the exit status stays 0
        if not c["passed"]:
            print(f"warning: {out}: fit quality: {c['name']}: {c['message']}", file=sys.stderr)


def cmd_convert(args) -> int:
    from helmholtz_pinn.io.convert import convert

    keys = ("kind", "variable", "axes", "frequency", "spacing", "spacing_unit", "phase", "preset")
    mask_from = "magnitude" if args.mask_from_magnitude else None
    dataset = convert(args.inputs, mask_from=mask_from, **{k: getattr(args, k) for k in keys})
    _write_dataset(dataset, args.out)
    return 0


COMMANDS = dict(
    simulate=cmd_simulate, invert=cmd_invert, baseline=cmd_baseline, convert=cmd_convert
)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from helmholtz_pinn.assess.fit_checks import FitQualityWarning
    from helmholtz_pinn.errors import HelmholtzPinnError, Interrupted

    try:
        with warnings.catch_warnings():  # _summary prints failed checks, once per result
            warnings.simplefilter("ignore", FitQualityWarning)
            return COMMANDS[args.command](args)
    except (Interrupted, KeyboardInterrupt) as err:  # Ctrl-C: one line, status 130
        if args.debug:
            raise
        said = str(err) or "interrupted (SIGINT) outside a training block: nothing new saved"
        print(f"helmholtz-pinn {args.command}: {said}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except HelmholtzPinnError as err:
        if args.debug:
            raise
        print(f"helmholtz-pinn {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
