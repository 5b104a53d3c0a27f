"""Output folder handling: the one place that creates and writes result files."""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

from helmholtz_pinn.errors import OutputError


def prepare_dir(out: str | Path) -> Path:
    """Create ``out`` (and parents) and check it is writable; clear error otherwise."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot create output folder {out}: {err.strerror}") from None
    if not out.is_dir() or not os.access(out, os.W_OK):
        raise OutputError(f"output folder {out} is not a writable directory")
    return out


def result_dirs(out: Path, paths: list[Path]) -> list[Path]:
    """OUT/<stem> per input file of a batched fit; the index is prefixed when stems repeat."""
    stems = [Path(p).name.removesuffix(".npz") for p in paths]
    if len(set(stems)) < len(stems):
        stems = [f"{i}_{s}" for i, s in enumerate(stems)]
    return [Path(out) / s for s in stems]


def _plain(value):
    """JSON-safe: NaN/Inf become None, numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, atomically (temp file then rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_plain(data), indent=2, sort_keys=True))
    tmp.replace(path)


def write_history(path: Path, history: list[dict]) -> None:
    """One CSV row per block: step, time_s, lr, mean and last losses."""
    if not history:
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(history[0]))
        writer.writeheader()
        writer.writerows(history)
