"""Training logs: callbacks for ``invert(..., callback=...)``.

``invert`` calls ``callback(record)`` once per training block (every ``sync_interval``
steps) with a dict of plain numbers::

    {"step": 2000, "time_s": 41.3, "lr": 1e-3,          # step count, seconds, Adam rate
     "loss": 0.012, "data": 0.010, "pde": 0.002,          # block means (nondimensional)
     "last_loss": ..., "last_data": ..., "last_pde": ...,  # last step of the block
     "retries": 0}                                          # divergence roll-backs so far

A callback that returns True stops the fit after that block. This module provides

- :class:`HistoryLogger`: keeps the records and, optionally, appends them to a JSON-lines
  file (one object per line, flushed each block, so ``tail -f`` shows the fit);
- :class:`TensorBoardLogger`: writes TensorBoard event files (needs ``tensorboardX``);
- :func:`chain`: several callbacks as one.

Example::

    from helmholtz_pinn.report.logs import TensorBoardLogger
    with TensorBoardLogger("runs/four-target") as tb:
        result = invert(dataset, callback=tb)
        tb.log_result(result)
    # then: tensorboard --logdir runs
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helmholtz_pinn.errors import InputError, MissingDependencyError

__all__ = ["HistoryLogger", "MissingDependencyError", "TensorBoardLogger", "chain"]

Callback = Callable[[dict], "bool | None"]

# TensorBoard tag of each record key; other numeric keys are written under "train/".
_TAGS = {
    "loss": "loss/total",
    "data": "loss/data",
    "pde": "loss/pde",
    "last_loss": "loss_last_step/total",
    "last_data": "loss_last_step/data",
    "last_pde": "loss_last_step/pde",
    "lr": "train/learning_rate",
    "time_s": "train/wall_time_s",
    "retries": "train/retries",
}


def _numbers(record: dict) -> dict[str, float]:
    """The finite-or-not real numbers of ``record`` (bools and strings skipped)."""
    return {
        k: float(v)
        for k, v in record.items()
        if isinstance(v, numbers.Real) and not isinstance(v, bool)
    }


class HistoryLogger:
    """Collects the per-block records; optionally appends each to a JSON-lines file.

    Args:
      path: file to append to (``.jsonl``), or None to keep the records in memory only.
        The parent folder is created. Non-finite numbers are written as ``null``.
      stop_after_s: stop the fit (return True) once ``time_s`` exceeds this many
        seconds; None never stops.

    Attributes:
      records: every record seen, in order (copies).
    """

    def __init__(self, path: str | Path | None = None, *, stop_after_s: float | None = None):
        if stop_after_s is not None and not stop_after_s > 0:
            raise InputError(f"stop_after_s must be > 0 seconds or None; got {stop_after_s!r}")
        self.path = None if path is None else Path(path)
        self.stop_after_s = stop_after_s
        self.records: list[dict] = []
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, record: dict) -> bool:
        self.records.append(dict(record))
        if self.path is not None:
            line = {
                k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                for k, v in record.items()
            }
            with self.path.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
        return self.stop_after_s is not None and record.get("time_s", 0.0) > self.stop_after_s

    def column(self, key: str) -> list[float]:
        """One key across the records, e.g. ``column("loss")``."""
        return [r[key] for r in self.records if key in r]


class TensorBoardLogger:
    """Writes each record as TensorBoard scalars (tags ``loss/*``, ``train/*``).

    ``global_step`` is the record's ``step``. Use as a context manager or call
    :meth:`close`. View with ``tensorboard --logdir DIR`` (TensorBoard itself is a
    separate install; the event files are written by ``tensorboardX``).

    Args:
      logdir: folder for the event files (created).
      flush_secs: how often tensorboardX flushes to disk; each record is also flushed.

    Raises:
      MissingDependencyError: if ``tensorboardX`` is not installed (the message says
        how to install it).
    """

    def __init__(self, logdir: str | Path, *, flush_secs: int = 10):
        try:
            from tensorboardX import SummaryWriter
        except ImportError as err:
            raise MissingDependencyError(
                "TensorBoard logging needs the package 'tensorboardX': "
                "pip install tensorboardX  (or pip install -e '.[dev]')"
            ) from err
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._writer = SummaryWriter(logdir=str(self.logdir), flush_secs=flush_secs)

    def __call__(self, record: dict) -> None:
        values = _numbers(record)
        step = int(values.pop("step", 0))
        for key, value in values.items():
            self._writer.add_scalar(_TAGS.get(key, f"train/{key}"), value, step)
        self._writer.flush()

    def log_text(self, tag: str, text: str, step: int = 0) -> None:
        """Free text (e.g. the configuration) under ``tag``."""
        self._writer.add_text(tag, text, step)

    def log_result(self, result: Any) -> None:
        """Final facts of a :class:`~helmholtz_pinn.fit.inversion.Result`: numeric metrics as
        ``metrics/*`` scalars, the configuration as text, the modulus map as a figure."""
        import dataclasses

        step = int(result.metrics.get("steps", 0) or 0)
        for key, value in _numbers(result.metrics).items():
            self._writer.add_scalar(f"metrics/{key}", value, step)
        if dataclasses.is_dataclass(result.config):
            config = json.dumps(dataclasses.asdict(result.config), indent=2)
            self.log_text("config", f"```\n{config}\n```", step)
        from matplotlib.figure import Figure

        from helmholtz_pinn.report import figures

        fig = figures.modulus_figure(result.mu, result.dataset, fig=Figure())
        self._writer.add_figure("modulus", fig, step, close=False)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> TensorBoardLogger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def chain(*callbacks: Callback | None) -> Callback:
    """One callback that calls each of ``callbacks`` (None entries skipped) in order and
    asks to stop when any of them does."""
    active = [c for c in callbacks if c is not None]

    def call(record: dict) -> bool:
        stop = False
        for callback in active:
            stop = bool(callback(record)) or stop
        return stop

    return call
