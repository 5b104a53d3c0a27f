"""Atomic orbax checkpoints of a fit (device state + host loop state) and resume.

Files: ``OUT/checkpoints/<step>/{state, host}``; orbax writes each step into a
temporary folder and renames it when complete, so a killed run leaves either the
previous checkpoint or the new one, never half of one. The newest two are kept.
A checkpoint comes every ``checkpoint_every`` blocks, but none sooner than
:data:`MIN_INTERVAL_S` after the previous one (or the start), so that a short fit waits
for none but its last; the last block, an early stop and an interrupt always write one.
Each checkpoint also holds the settings and a fingerprint of the data (shape,
frequencies, spacing, sha256 of u and the mask per dataset); resuming with other
settings or other data raises :class:`CheckpointError` naming what differs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import CheckpointError, ConfigError, OutputError
from helmholtz_pinn.fit.host_loop import HostState
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn.train import TrainState

NO_CHECKPOINT = "no usable checkpoint in"  # how a resume="strict" that found none begins

# fields that may differ between the run that saved and the run that resumes (the matmul
# precision of the Adam blocks still to run, too: a resume on another machine kind)
RESUMABLE_CHANGES = ("steps", "checkpoint_every", "metric_margin", "ensemble_keep", "tf32_steps")

MIN_INTERVAL_S = 60.0  # s of wall time at least between two periodic checkpoints


def fingerprint(datasets: Sequence[Dataset]) -> dict:
    """What identifies the data a fit was run on, per dataset in order: grid shape of u,
    frequencies (Hz), spacing (m) and the sha256 of u's and the mask's bytes (one pass
    over the arrays, no copy when they are contiguous)."""

    def digest(d: Dataset) -> str:
        h = hashlib.sha256()
        for a in (d.u, np.ones(d.grid, bool) if d.mask is None else d.mask):
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
        return h.hexdigest()

    return {
        "shape": [list(d.u.shape) for d in datasets],
        "frequency_hz": [[float(f) for f in d.frequency] for d in datasets],
        "spacing_m": [[float(s) for s in d.spacing] for d in datasets],
        "sha256": [digest(d) for d in datasets],
    }


_WHAT = {
    "shape": ("shape (F, C, *grid)", ""),
    "frequency_hz": ("frequencies", " Hz"),
    "spacing_m": ("spacing", " m"),
}


def data_difference(saved: dict, now: dict) -> str | None:
    """One phrase naming how the data ``now`` differ from the fingerprint ``saved``, or
    None when they match."""
    if len(saved["sha256"]) != len(now["sha256"]):
        return (
            f"checkpoint was written for {len(saved['sha256'])} dataset(s); "
            f"these are {len(now['sha256'])}"
        )
    for i in range(len(now["sha256"])):
        which = "" if len(now["sha256"]) == 1 else f" (dataset {i})"
        for key, (name, unit) in _WHAT.items():
            a, b = saved[key][i], now[key][i]
            if a != b:
                return (
                    f"checkpoint was written for data with {name} {_fmt(a)}{unit}{which}; "
                    f"these have {_fmt(b)}"
                )
        if saved["sha256"][i] != now["sha256"][i]:
            return (
                "checkpoint was written for other values of u or the mask"
                f"{which} (sha256 {saved['sha256'][i][:12]}...; these have "
                f"{now['sha256'][i][:12]}...)"
            )
    return None


def _fmt(values: list) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


class Checkpointer:
    """Saves every ``every`` blocks, :data:`MIN_INTERVAL_S` apart at least (as the host
    loop's ``on_block``), and restores the newest."""

    clock = staticmethod(time.monotonic)  # s; what the interval is measured by

    def __init__(self, directory: str | Path, config: Config, every: int, data: dict | None = None):
        """``data``: the :func:`fingerprint` of the datasets, saved and checked on restore.
        The first periodic checkpoint's interval counts from this call."""
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self.directory = Path(directory).absolute()
        self.config = config
        self.every = every
        self.data = data
        self.saved_at = self.clock()
        quiet_storage(self.directory / LOG)
        try:
            self.manager = ocp.CheckpointManager(
                self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=2)
            )
        except Exception as err:  # noqa: BLE001 - a full or read-only disk, in any form
            raise OutputError(
                f"cannot open the checkpoint folder {self.directory}: {_first_line(err)}"
            ) from None

    def __call__(self, state: TrainState, host: HostState) -> None:
        """Save every ``every`` blocks once :data:`MIN_INTERVAL_S` have passed since the
        previous checkpoint, and always after the last block and at an early stop (so a
        finished fit restores as finished)."""
        done = len(host.history)
        last = -(-self.config.steps // self.config.sync_interval)
        stopped = all(p.stopped for p in host.plateaus)
        due = done % self.every == 0 and self.clock() - self.saved_at >= MIN_INTERVAL_S
        if due or done >= last or stopped:
            self.save(state, host)

    def save(self, state: TrainState, host: HostState) -> None:
        step = int(host.history[-1]["step"]) if host.history else 0
        if step in self.manager.all_steps():
            return
        meta = {
            "host": host.to_json(),
            "config": dataclasses.asdict(self.config),
            "data": self.data,
            "members": list(np.shape(state.step)),  # [S] stacked (padded to the devices)
        }
        args = self._ocp.args.Composite(
            state=self._ocp.args.StandardSave(state), host=self._ocp.args.JsonSave(meta)
        )
        try:
            self.manager.save(step, args=args)
            self.manager.wait_until_finished()
            self.saved_at = self.clock()
            self._drop_previous()  # this run's first checkpoint is whole
        except Exception as err:  # noqa: BLE001 - disk full, read-only: orbax and tensorstore
            # raise OSError, ValueError or bare Exception; the previous checkpoint is whole
            self._failed = True
            self._remove_partial()
            kept = self.manager.latest_step()
            raise OutputError(
                f"cannot write checkpoint {self.directory / str(step)}: {_first_line(err)}; "
                + ("no earlier checkpoint" if kept is None else f"step {kept} is kept")
                + ": free space and continue with resume=True"
            ) from None

    def _remove_partial(self) -> None:
        """Delete the temporary folders of a save that failed half-way."""
        import shutil

        for tmp in self.directory.glob("*.orbax-checkpoint-tmp*"):
            shutil.rmtree(tmp, ignore_errors=True)

    def set_aside(self) -> list[int]:
        """Move an earlier run's checkpoints out of the folder, into ``<folder>.previous``
        (a fresh fit must not leave them to be resumed later, and must not delete them
        before its own first checkpoint is whole: :meth:`save` deletes them then);
        returns their steps."""
        steps = sorted(self.manager.all_steps())
        if not steps:
            return []
        self.previous.mkdir(parents=True, exist_ok=True)
        for step in steps:
            (self.directory / str(step)).replace(self.previous / str(step))
        self.manager.reload()
        return steps

    def take_back(self) -> list[int]:
        """Move the checkpoints that a fresh fit set aside into ``<folder>.previous`` (and
        then stopped before its own first one) back into the folder, so that a resume
        continues them (or is refused by name) instead of starting afresh and deleting
        them; returns their steps."""
        if self.manager.all_steps() or not self.previous.is_dir():
            return []
        steps = sorted(int(p.name) for p in self.previous.iterdir() if p.name.isdigit())
        for step in steps:
            (self.previous / str(step)).replace(self.directory / str(step))
        if not any(self.previous.iterdir()):
            self.previous.rmdir()
        self.manager.reload()
        return steps

    @property
    def previous(self) -> Path:
        return self.directory.with_name(self.directory.name + ".previous")

    def _drop_previous(self) -> None:
        import shutil

        shutil.rmtree(self.previous, ignore_errors=True)

    def restore(self, like: TrainState) -> tuple[TrainState, HostState, int] | None:
        """The newest readable checkpoint shaped like ``like`` as (state, host, step), or
        None if there is none. One that cannot be read (corrupt, truncated) is noted in
        ``self.unreadable`` and the next older one is tried (the unreadable ones are then
        deleted); when none can be read, the newest one's error is raised.

        The settings and the data fingerprint are checked (from the small JSON item)
        before the state is read, so other data are named, not met as a shape error."""
        self.unreadable: list[str] = []
        bad = []
        for step in sorted(self.manager.all_steps(), reverse=True):
            try:
                state, host = self._restore_step(step, like)
            except _Unreadable as err:
                self.unreadable.append(str(err))
                bad.append(step)
                continue
            for b in bad:  # a later save of that step would otherwise be skipped
                self.manager.delete(b)
            return state, host, step
        if self.unreadable:
            raise CheckpointError(f"{self.unreadable[0]}; remove the folder to start afresh")
        return None

    def _restore_step(self, step: int, like: TrainState) -> tuple[TrainState, HostState]:
        ocp = self._ocp
        meta = self._restore(step, ocp.args.Composite(host=ocp.args.JsonRestore())).host
        try:  # another version's checkpoint may lack a key or hold another shape
            host = HostState.from_json(meta["host"])
            config = dict(meta["config"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise _Unreadable(
                f"checkpoint {self.directory / str(step)} cannot be restored (its host item "
                f"does not match this version: {type(err).__name__} {_first_line(err)})"
            ) from None
        self._check_config(config)
        self._check_data(meta.get("data"))
        saved, now = meta.get("members"), list(np.shape(like.step))
        if saved is not None and saved != now:
            raise CheckpointError(
                f"checkpoint {self.directory / str(step)} holds {saved[0] if saved else 1} "
                f"stacked fits (members padded to a multiple of the devices used); this run "
                f"has {now[0] if now else 1}: resume with the devices= of the "
                "interrupted run"
            )
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        state = self._restore(
            step, ocp.args.Composite(state=ocp.args.StandardRestore(abstract))
        ).state
        return state, host

    def _restore(self, step: int, args):
        try:
            return self.manager.restore(step, args=args)
        except Exception as err:  # noqa: BLE001 - any storage-layer failure: try an older one
            why = _first_line(err)
            raise _Unreadable(
                f"checkpoint {self.directory / str(step)} cannot be restored ({why})"
            ) from None

    def _check_data(self, saved: dict | None) -> None:
        if self.data is None or saved is None:  # a checkpoint from before fingerprints
            return
        diff = data_difference(saved, self.data)
        if diff:
            raise CheckpointError(
                f"cannot resume from {self.directory}: {diff}; use the same data or a new "
                "output folder"
            )

    def _check_config(self, saved: dict) -> None:
        """Refuse other settings than the saved ones; a field the saved settings lack (a
        checkpoint of an earlier version) counts as its default."""
        now = _plain(dataclasses.asdict(self.config))
        saved = {**_plain(_defaults()), **_plain(saved)}
        diff = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k) != now[k])
        if diff:
            detail = ", ".join(f"{k}: saved {saved.get(k)!r}, now {now[k]!r}" for k in diff)
            raise CheckpointError(
                f"cannot resume from {self.directory}: settings differ ({detail}); "
                "use the same settings or a new output folder"
            )

    def close(self) -> None:
        """Close the manager; an error of a background write is already reported by
        :meth:`save` (or was not needed), so it is not raised again."""
        try:
            self.manager.close()
        except Exception:  # noqa: BLE001 - orbax re-raises a failed background write
            self._failed = True
        if getattr(self, "_failed", False):  # its background threads have ended now
            self._remove_partial()
            import atexit

            atexit.register(self._remove_partial)  # and what a late write left


def _defaults() -> dict:
    """The :class:`Config` default of every field."""
    out = {}
    for f in dataclasses.fields(Config):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _plain(values: dict) -> dict:
    """``values`` as JSON gives them back (tuples become lists), as a checkpoint holds
    them."""
    import json

    return json.loads(json.dumps(values, default=str))


def _first_line(err: BaseException, limit: int = 160) -> str:
    """An orbax/tensorstore message (long, several lines) as one short line."""
    why = " ".join(str(getattr(err, "strerror", None) or err).split()) or type(err).__name__
    if "No space left on device" in why:  # tensorstore's RESOURCE_EXHAUSTED: a full disk
        return "No space left on device"
    return why if len(why) <= limit else why[: limit - 3] + "..."


LOG = "storage.log"  # OUT/checkpoints/storage.log: what orbax itself reported, if anything
_quiet = {"log": None}


def quiet_storage(log: Path) -> None:
    """Keep orbax's own reports off the terminal: its log records (the ``absl`` logger:
    tracebacks of a failed background write) and the ``Event loop is closed`` errors
    that its callbacks raise after a failed read go to the file ``log`` (created when
    there is something to write; nothing is lost where it cannot be written). What the
    run itself reports about a checkpoint comes as one line from :class:`Checkpointer`.
    Process-wide; the newest ``log`` is used."""
    _quiet["log"] = Path(log)
    logger = logging.getLogger("absl")
    if not any(isinstance(h, _ToLog) for h in logger.handlers):
        logger.addHandler(_ToLog())
        logger.propagate = False
    if getattr(sys.unraisablehook, "_quiet", False):
        return
    previous = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, RuntimeError) and "Event loop is closed" in str(
            unraisable.exc_value
        ):
            _to_log(f"ignored: {unraisable.exc_value!r} in {unraisable.object!r}")
        else:
            previous(unraisable)

    hook._quiet = True
    sys.unraisablehook = hook
    logging.getLogger("asyncio").addFilter(_orbax_futures)


def _orbax_futures(record: logging.LogRecord) -> bool:
    """asyncio's "Future exception was never retrieved" of orbax's failed background
    writes: into the storage log, not onto the terminal."""
    if "never retrieved" not in str(record.msg):
        return True
    _ToLog().emit(record)
    return False


def _to_log(text: str) -> None:
    """Append ``text`` to the storage log; an error (a full disk) drops it."""
    try:
        with open(_quiet["log"], "a") as fh:
            fh.write(text.rstrip("\n") + "\n")
    except (OSError, TypeError):
        pass


class _ToLog(logging.Handler):
    """A logging handler writing into the storage log (:func:`quiet_storage`)."""

    def emit(self, record) -> None:
        try:
            _to_log(self.format(record))
        except Exception:  # noqa: BLE001 - a log record must never stop a fit
            pass


class _Unreadable(CheckpointError):
    """A checkpoint whose files cannot be read (an older one may still be)."""


def resume_mode(resume) -> bool | str:
    """``resume`` checked at the API boundary: True, False or "strict"."""
    if resume is True or resume is False or resume == "strict":
        return resume
    raise ConfigError(f"resume must be True, False or 'strict'; got {resume!r}")


def start(
    directory: str | Path | None,
    config: Config,
    data: dict,
    resume: bool | str,
    state: TrainState,
) -> tuple[Checkpointer | None, TrainState, HostState | None, dict]:
    """Open the checkpoints of a fit and, with ``resume``, restore the newest one:
    (checkpointer or None, state, host state or None, run facts).

    The facts: ``resumed_from_step`` (int, or None for a fresh start) and
    ``resumed_from`` (the checkpoint's folder); ``no_checkpoint_in`` (the folder) when a
    resume found nothing to continue from and the fit starts at step 0. Without
    ``resume`` the folder's checkpoints of an earlier run are set aside into
    ``<folder>.previous`` and deleted once this run's first checkpoint is written
    (``cleared_checkpoints``: the folder and their steps); with ``resume``, those that
    a fresh fit set aside and never replaced (it stopped before its first checkpoint)
    are taken back and continued (:meth:`Checkpointer.take_back`). With
    ``resume="strict"`` a resume that finds no checkpoint raises :class:`CheckpointError`
    instead of starting at step 0."""
    facts = {"resumed_from_step": None, "resumed_from": None}
    ckpt = (
        None
        if directory is None
        else Checkpointer(directory, config, config.checkpoint_every, data)
    )
    if not resume and ckpt is not None and (old := ckpt.set_aside()):
        facts["cleared_checkpoints"] = f"{ckpt.directory} (steps {', '.join(map(str, old))})"
    if resume and ckpt is not None:
        ckpt.take_back()  # a fresh fit's set-aside checkpoints, when it wrote none of its own
    try:
        restored = ckpt.restore(state) if resume and ckpt is not None else None
    except CheckpointError:
        ckpt.close()
        raise
    if restored is not None:
        state, host, step = restored
        facts = {"resumed_from_step": step, "resumed_from": str(ckpt.directory / str(step))}
        if ckpt.unreadable:
            facts["unreadable_checkpoints"] = ckpt.unreadable
        return ckpt, state, host, facts
    if resume:
        where = "(no checkpoint folder given)" if ckpt is None else str(ckpt.directory)
        if resume == "strict":
            if ckpt is not None:
                ckpt.close()
            raise CheckpointError(
                f"{NO_CHECKPOINT} {where}: resume='strict' does not start a fit afresh"
            )
        facts["no_checkpoint_in"] = where
    return ckpt, state, None, facts
