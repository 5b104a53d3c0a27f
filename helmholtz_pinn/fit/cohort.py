"""A cohort: many dataset files, each fitted into its own folder, over the local devices.

:func:`run_cohort` fits every file of its shard with :func:`helmholtz_pinn.invert` and
writes the result with :meth:`Result.save` into ``OUT/<file stem>/``
(:func:`helmholtz_pinn.report.files.result_dirs`), as ``helmholtz-pinn invert FILE --out
OUT/<stem>`` would, and the facts of every map into one table (:data:`COLUMNS`).

- **Devices**: one worker process per group of local devices (by default one worker per
  device), each pinned to its group before JAX starts (``CUDA_VISIBLE_DEVICES`` on GPUs,
  the forced host device count on the CPU); workers take the next file as they finish,
  so a worker's compiled program serves every file of the same shape. One worker fits
  in this process.
- **Hosts**: ``shard=(i, n)`` takes the files whose index in ``inputs`` is i mod n; n
  hosts (a Slurm array) given the same ``inputs`` and output root fit every file once.
- **Resumable per file**: a folder holding a finished result (``metrics.json``,
  :data:`helmholtz_pinn.report.files.LAST`) is skipped, not refitted; a fit stopped
  part-way continues from its checkpoints in ``OUT/<stem>/checkpoints``; a stopped
  result write is finished or removed first (:func:`files.finish_swaps`). Each folder
  is held with :class:`~helmholtz_pinn.report.folder_lock.FolderLock` while it is fitted.
- **Failures**: a file that cannot be fitted (unreadable, refused, diverged, or any
  other error) gets ``OUT/<stem>/failure.json`` and a ``failed`` row with the error's
  first line; the cohort goes on. The next run tries it again.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import multiprocessing
import os
import queue
import re
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, Interrupted, OutputError
from helmholtz_pinn.report import files

# One row per file and frequency (a file without maps: one row, the map columns empty).
# storage/loss: median G' and G'' over the mask, Pa; phase: median of atan(G''/G'),
# degrees; law: the law of the map kept; fit_checks: pass, or fail when a check of
# metrics.json's fit_quality fired (their names in checks_fired, ";"-separated);
# wall_time_s: the fit's time (metrics.json); file_time_s: this run's time for the file
# (read, fit, write), empty when skipped.
COLUMNS = (
    "file", "status", "frequency_hz", "storage_pa", "loss_pa", "phase_deg", "law",
    "fit_checks", "checks_fired", "wall_time_s", "file_time_s", "worker", "error", "out",
)  # fmt: skip
STATUSES = ("ok", "failed", "skipped", "pending")  # pending: not reached (a stopped run)
TABLE = "cohort.csv"


def shard_files(n_files: int, shard: tuple[int, int] = (0, 1)) -> list[int]:
    """The indices of the files that shard ``(i, n)`` takes: those equal to i mod n."""
    i, n = _checked_shard(shard)
    return [k for k in range(n_files) if k % n == i]


def table_name(shard: tuple[int, int] = (0, 1)) -> str:
    """``cohort.csv``, or ``cohort-<i>of<n>.csv`` for shard i of n > 1 (each host its own)."""
    i, n = _checked_shard(shard)
    return TABLE if n == 1 else f"cohort-{i}of{n}.csv"


def _checked_shard(shard) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in shard)
    except (TypeError, ValueError):
        raise ConfigError(f"shard must be (i, n) with 0 <= i < n; got {shard!r}") from None
    if not 0 <= i < n:
        raise ConfigError(f"shard must be (i, n) with 0 <= i < n; got {shard!r}")
    return i, n


def run_cohort(
    inputs: Sequence[str | os.PathLike],
    out_root: str | os.PathLike,
    config: Config | None = None,
    *,
    shard: tuple[int, int] = (0, 1),
    workers: int | None = None,
    nifti: bool = False,
    force: bool = False,
    drop_empty_components: bool = False,
    checkpoints: bool = True,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    on_file: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Fit each dataset file of ``inputs`` in shard ``(i, n)`` with ``config`` into
    ``out_root/<stem>/``; write ``out_root/cohort.csv`` (:func:`table_name`) and return
    its rows (:data:`COLUMNS`).

    Args:
      inputs: the dataset files (``.npz``), in the cohort's order.
      out_root: the folder holding one result folder per file and the table.
      config: the settings of every fit; None: ``Config()``.
      shard: ``(i, n)``: this process fits the files whose index mod n is i (a Slurm
        array's task), :func:`shard_files`.
      workers: processes, each pinned to its share of the local devices (default: one
        per device; never more than the files to fit); 1 fits in this process on its
        devices, as :func:`helmholtz_pinn.invert` would.
      nifti: also write the maps as NIfTI (``Result.save``).
      force: fit files that fail the physics checks (``invert``'s).
      drop_empty_components: drop empty components (``invert``'s).
      checkpoints: checkpoint each fit (False: a stopped file starts afresh).
      cache_dir: the persistent compilation cache (:func:`enable_compilation_cache`).
      progress: print one line per file to stderr.
      on_file: called in this process as each file ends, with its record (file, status,
        error, worker, file_time_s).

    Returns:
      The table's rows (:data:`COLUMNS`), one per file and frequency.

    Raises:
      Interrupted: stopped (SIGINT, SIGTERM), after writing the table of the files done
        so far (the rest ``pending``).
    """
    cfg = config if config is not None else Config()
    if not isinstance(cfg, Config):
        raise ConfigError(f"config must be a helmholtz_pinn.Config or None; got {type(cfg)}")
    paths = [Path(p) for p in inputs]
    if not paths:
        raise ConfigError("a cohort needs at least one dataset file; got none")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):  # fmt: skip
        raise ConfigError(f"workers must be a positive integer or None; got {workers!r}")
    root = files.prepare_dir(out_root)
    outs = files.result_dirs(root, paths)
    mine = shard_files(len(paths), shard)
    options = dict(nifti=nifti, force=force, drop=drop_empty_components, checkpoints=checkpoints)
    view = _Progress(paths, mine, progress, on_file)
    records = {k: _skipped() for k in mine if _finished(outs[k])}
    for k in records:
        view.ended(k, records[k])
    todo = [k for k in mine if k not in records]
    try:
        if todo:
            groups = _device_groups(workers, len(todo))
            view.start(len(todo), groups)
            run = _in_process if len(groups) == 1 else _in_workers
            run(todo, paths, outs, cfg, options, cache_dir, groups, records, view)
    except (Interrupted, KeyboardInterrupt) as err:
        _write_table(root / table_name(shard), paths, outs, mine, records)
        done = sum(k in records for k in mine)
        raise Interrupted(
            f"cohort stopped ({getattr(err, 'signal_name', 'SIGINT')}) with {done} of "
            f"{len(mine)} files done; {root / table_name(shard)} lists them: run the same "
            "command again to go on (finished files are skipped)",
            signal_name=getattr(err, "signal_name", "SIGINT"),
        ) from None
    rows = _write_table(root / table_name(shard), paths, outs, mine, records)
    view.finish(root / table_name(shard))
    return rows


def _finished(out: Path) -> bool:
    """Whether ``out`` holds a whole result: ``metrics.json`` and no stopped result write
    (which the file's fit finishes or removes, holding its folder)."""
    if not out.is_dir():
        return False
    if (out / files.STAGE).is_dir():
        return False  # the fit of this file finishes (or removes) the stage under its lock
    return (out / files.LAST).is_file()


def _skipped() -> dict:
    return {"status": "skipped", "error": "", "worker": "", "file_time_s": None}


# --- fitting one file (in this process or a worker) -----------------------------------


def _fit_file(path: Path, out: Path, cfg: Config, options: dict) -> dict:
    """Fit one file into ``out`` with :func:`helmholtz_pinn.invert` and save it: a record
    (status ``ok``; ``skipped`` when ``out`` was finished meanwhile; ``failed`` with the
    error's first line, also written as ``out/failure.json`` when the folder was held)."""
    from helmholtz_pinn.assess.fit_checks import FitQualityWarning
    from helmholtz_pinn.report.folder_lock import FolderLock

    t0 = time.perf_counter()
    lock = FolderLock(out)
    try:
        lock.acquire()  # another run fitting this file: failed here, its folder untouched
    except OutputError as err:
        return {"status": "failed", "error": _first_line(err), "file_time_s": None}
    try:
        for note in files.finish_swaps(out):
            print(f"note: {note}", file=sys.stderr)
        if (out / files.LAST).is_file():
            return _skipped()
        with warnings.catch_warnings():  # the table and metrics.json name the checks
            warnings.simplefilter("ignore", FitQualityWarning)
            _fit_and_save(path, out, cfg, options)
    except (Interrupted, KeyboardInterrupt):
        raise
    except Exception as err:  # one file's failure must not stop the cohort
        line = _first_line(err)
        with contextlib.suppress(OSError):  # the folder may be what failed
            files.clear_results(out)  # an earlier map must not look like this run's
            files.write_json(out / "failure.json", {"error": line})
        return {"status": "failed", "error": line, "file_time_s": time.perf_counter() - t0}
    finally:
        lock.release()
    return {"status": "ok", "error": "", "file_time_s": time.perf_counter() - t0}


def _fit_and_save(path: Path, out: Path, cfg: Config, options: dict) -> None:
    from helmholtz_pinn.fit import inversion
    from helmholtz_pinn.io import dataset as data

    dataset = data.load(path)
    folder = out / "checkpoints" if options["checkpoints"] else None
    resume = folder is not None and folder.is_dir() and any(folder.iterdir())
    result = inversion.invert(
        dataset,
        cfg,
        progress=False,
        checkpoint_dir=folder,
        resume=resume,
        force=options["force"],
        drop_empty_components=options["drop"],
    )
    result.save(out, nifti=options["nifti"])


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    name = type(err).__name__
    return f"{name}: {text[0]}" if text else name


def _in_process(todo, paths, outs, cfg, options, cache_dir, groups, records, view) -> None:
    """Fit the files ``todo`` one after the other in this process."""
    if cache_dir is not None:
        from helmholtz_pinn.fit.compile_cache import enable_compilation_cache

        enable_compilation_cache(cache_dir)
    for k in todo:
        view.began(k, 0)
        records[k] = dict(_fit_file(paths[k], outs[k], cfg, options), worker=0)
        view.ended(k, records[k])


# --- worker processes -----------------------------------------------------------------


def _in_workers(todo, paths, outs, cfg, options, cache_dir, groups, records, view) -> None:
    """Fit the files ``todo`` in one spawned process per device group; each takes the
    next file from a shared queue as it finishes one. A worker that dies fails the file
    it held; when none is left, the files not fitted fail."""
    context = multiprocessing.get_context("spawn")
    jobs, done = context.Queue(), context.Queue()
    for k in todo:
        jobs.put((k, str(paths[k]), str(outs[k])))
    for _ in groups:
        jobs.put(None)
    procs = [
        context.Process(
            target=_worker,
            args=(
                w,
                _pinned(group),
                _jax_settings(),
                jobs,
                done,
                cfg,
                options,
                cache_dir,
                os.getpid(),
            ),  # fmt: skip
            daemon=True,
        )
        for w, group in enumerate(groups)
    ]
    for p in procs:
        p.start()
    running: dict[int, int] = {}  # worker -> the file it fits

    def take(message) -> None:
        kind, w, k, record = message
        if kind == "began":
            running[w] = k
            view.began(k, w)
        else:
            running.pop(w, None)
            records[k] = dict(record, worker=w)
            view.ended(k, records[k])

    try:
        while any(k not in records for k in todo):
            try:
                take(done.get(timeout=1.0))
                continue
            except queue.Empty:
                pass
            dead = [w for w, p in enumerate(procs) if not p.is_alive()]
            with contextlib.suppress(queue.Empty):  # what the dead sent before they ended
                while dead:
                    take(done.get(timeout=0.5))
            for w in dead:
                if w in running:
                    line = f"its worker process ended (exit code {procs[w].exitcode})"
                    _fail(running.pop(w), line, w, records, view)
            if len(dead) == len(procs):
                for k in todo:
                    if k not in records:
                        _fail(k, "not fitted: every worker process ended", "", records, view)
    except BaseException as err:
        _pass_on(err, procs)
        raise
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()


def _pass_on(err: BaseException, procs) -> None:
    """Pass the signal that stopped this process on to the workers, so that each fit ends
    its block and writes its checkpoint: SIGINT at once (the workers are in their own
    process group, out of reach of the terminal's Ctrl-C); SIGTERM to those still running
    after 10 s (Slurm signals every process, and a second SIGTERM ends a fit at once)."""
    term = getattr(err, "signal_name", "") == "SIGTERM"
    if term:
        deadline = time.perf_counter() + 10.0
        for p in procs:
            p.join(timeout=max(0.0, deadline - time.perf_counter()))
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGTERM if term else signal.SIGINT)


def _fail(k: int, line: str, worker, records: dict, view) -> None:
    records[k] = {"status": "failed", "error": line, "worker": worker, "file_time_s": None}
    view.ended(k, records[k])


def _worker(w, env, settings, jobs, done, cfg, options, cache_dir, parent) -> None:
    """One worker: pinned by ``env`` before JAX starts and with the parent's JAX
    ``settings`` (:func:`_jax_settings`), it fits files from ``jobs`` until the end
    marker (or its parent is gone) and reports each on ``done``. It takes signals from
    its parent alone (its own process group; SIGTERM when the parent dies, on Linux), so
    one Ctrl-C stops each fit once, after its block, with a checkpoint."""
    os.environ.update(env)
    if settings:
        import jax

        for name, value in settings.items():
            jax.config.update(name, value)
    os.setpgrp()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    if cache_dir is not None:
        from helmholtz_pinn.fit.compile_cache import enable_compilation_cache

        enable_compilation_cache(cache_dir)
    with contextlib.suppress(Interrupted, KeyboardInterrupt):
        while os.getppid() == parent and (job := jobs.get()) is not None:
            k, path, out = job
            done.put(("began", w, k, None))
            done.put(("ended", w, k, _fit_file(Path(path), Path(out), cfg, options)))


# JAX settings a worker takes from this process where it has set them (a worker then
# computes what ``invert`` computes here).
INHERITED = ("jax_default_matmul_precision", "jax_numpy_rank_promotion", "jax_enable_x64")


def _jax_settings() -> dict:
    """This process's :data:`INHERITED` JAX settings, or none where it has not imported
    JAX."""
    jax = sys.modules.get("jax")
    return {} if jax is None else {name: getattr(jax.config, name) for name in INHERITED}


def _pinned(group: dict) -> dict:
    """The environment that pins a worker to its devices."""
    ids = group["ids"]
    if group["platform"] == "cpu":
        flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "",
                       os.environ.get("XLA_FLAGS", ""))  # fmt: skip
        return {"XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={len(ids)}"}
    return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, ids))}


def _device_groups(workers: int | None, n_files: int) -> list[dict]:
    """The device groups of the workers: ``workers`` (default: one per local device, at
    most ``n_files``) near-equal groups of the local devices, as ``{"platform", "ids"}``;
    one group (``ids`` empty: this process's own devices) for one worker."""
    if workers == 1 or n_files == 1:
        return [{"platform": None, "ids": []}]
    platform, count = _local_devices()
    n = min(workers or count, n_files)
    if n > 1 and platform not in ("cpu", "gpu"):
        raise ConfigError(
            f"workers={n}: a worker is pinned to CUDA GPUs or CPU devices, not to {platform} "
            "devices; use workers=1 (one process driving every device)"
        )
    if n > count:
        raise ConfigError(
            f"workers={n} but only {count} local {platform} device(s): at most one worker "
            "per device"
        )
    if n == 1:
        return [{"platform": None, "ids": []}]
    visible = _visible_ids(platform, count)
    return [
        {"platform": platform, "ids": visible[w * count // n : (w + 1) * count // n]}
        for w in range(n)
    ]


def _visible_ids(platform: str, count: int) -> list:
    """The device ids a worker's pin names: on GPUs the entries of CUDA_VISIBLE_DEVICES
    when set, else 0 .. count - 1."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES", "") if platform == "gpu" else ""
    ids = [s.strip() for s in given.split(",") if s.strip()]
    return ids[:count] if len(ids) >= count else list(range(count))


_PROBE = "import json, jax; print(json.dumps([jax.default_backend(), jax.local_device_count()]))"


def _local_devices() -> tuple[str, int]:
    """(platform, count) of the local devices that JAX sees, asked in a separate process
    so that this one holds no device memory while workers fit."""
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=600
    )
    try:
        platform, count = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        said = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"cannot count the local devices: JAX said {said!r}") from None
    return str(platform), int(count)


# --- the progress view and the table --------------------------------------------------


class _Progress:
    """One stderr line per file event: ``[done/total] file: status ...``."""

    def __init__(self, paths, mine, show: bool, on_file):
        self.paths, self.total, self.show, self.on_file = paths, len(mine), show, on_file
        self.done, self.t0 = 0, time.perf_counter()
        self.counts = dict.fromkeys(STATUSES, 0)

    def _say(self, line: str) -> None:
        if self.show:
            print(line, file=sys.stderr, flush=True)

    def start(self, n: int, groups: list[dict]) -> None:
        where = "in this process" if len(groups) == 1 else (
            f"on {len(groups)} workers (devices " +
            "; ".join(",".join(map(str, g["ids"])) for g in groups) + ")"
        )  # fmt: skip
        self._say(f"cohort: {n} of {self.total} files to fit {where}")

    def began(self, k: int, worker: int) -> None:
        self._say(f"[{self.done}/{self.total}] {self.paths[k].name}: fitting (worker {worker})")

    def ended(self, k: int, record: dict) -> None:
        self.done += 1
        self.counts[record["status"]] += 1
        seconds = record.get("file_time_s")
        said = record["status"] + (f" in {seconds:.1f} s" if seconds else "")
        said += f": {record['error']}" if record["error"] else ""
        self._say(f"[{self.done}/{self.total}] {self.paths[k].name}: {said}")
        if self.on_file is not None:
            self.on_file({"file": str(self.paths[k]), **record})

    def finish(self, table: Path) -> None:
        counts = ", ".join(f"{v} {k}" for k, v in self.counts.items() if v)
        minutes = (time.perf_counter() - self.t0) / 60
        self._say(f"cohort: {counts} of {self.total} files in {minutes:.1f} min; wrote {table}")


def _write_table(path: Path, paths, outs, mine, records) -> list[dict]:
    """Write the rows of the files ``mine`` as CSV (atomically) and return them."""
    rows = []
    for k in mine:
        record = records.get(k) or {"status": "pending", "error": "not fitted: the run stopped"}
        rows += _file_rows(paths[k], outs[k], record)
    tmp = path.with_suffix(".csv.tmp")
    try:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(path)
    except OSError as err:
        raise OutputError(f"cannot write the cohort table {path}: {err.strerror or err}") from None
    return rows


def _file_rows(path: Path, out: Path, record: dict) -> list[dict]:
    """The table rows of one file (:data:`COLUMNS`): one per frequency of its
    ``metrics.json`` when it holds a result, else one."""
    seconds = record.get("file_time_s")
    base = dict.fromkeys(COLUMNS, "")
    base.update(
        file=str(path),
        status=record["status"],
        error=record.get("error", ""),
        worker=record.get("worker", ""),
        file_time_s=round(seconds, 2) if seconds else "",
        out=str(out),
    )
    facts = _facts(out) if record["status"] in ("ok", "skipped") else None
    if facts is None:
        return [base]
    fired = [c["name"] for c in facts.get("fit_quality", []) if not c.get("passed", True)]
    base.update(
        law=_law(facts, out),
        fit_checks="fail" if fired else "pass",
        checks_fired=";".join(fired),
        wall_time_s=_number(facts.get("wall_time_s")),
    )
    per_map = (facts.get("clinical") or {}).get("mask") or {}
    if not per_map:
        return [base]
    return [
        dict(
            base,
            frequency_hz=_number(_hz(label)),
            storage_pa=_number(q.get("storage")),
            loss_pa=_number(q.get("loss")),
            phase_deg=_number(None if q.get("phase") is None else math.degrees(q["phase"])),
        )
        for label, q in per_map.items()
    ]


def _facts(out: Path) -> dict | None:
    try:
        return json.loads((out / files.LAST).read_text())
    except (OSError, ValueError):
        return None


def _law(facts: dict, out: Path) -> str:
    """The law of the map: the auto choice, else the fit's ``mu_model`` (config.json)."""
    chosen = (facts.get("law") or {}).get("mu_model")
    if chosen:
        return chosen
    try:
        return json.loads((out / "config.json").read_text()).get("mu_model") or ""
    except (OSError, ValueError, AttributeError):
        return ""


def _hz(label: str) -> float | None:
    try:
        return float(label.removesuffix("Hz"))
    except ValueError:
        return None


def _number(value) -> float | str:
    if isinstance(value, (int, float)) and math.isfinite(value):
        return round(float(value), 6)
    return ""
