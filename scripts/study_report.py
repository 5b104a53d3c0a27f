"""Number formatting and JSON-line output shared by the accuracy study's scalar part
(``accuracy.py``) and elastic part (``accuracy_elastic.py``)."""

from __future__ import annotations

import json
import math

import numpy as np


def noise_label(noise_db: float | None) -> str:
    """``clean`` or ``-20 dB``."""
    return "clean" if noise_db is None else f"{noise_db:g} dB"


def pct(x, digits: int = 1) -> str:
    """A fraction as a percentage; ``n/a`` for None or non-finite."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{round(100 * x, digits) + 0.0:.{digits}f} %"  # + 0.0: no "-0 %"


def num(x, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None or not math.isfinite(x) else fmt.format(x)


def seconds(x) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.1f}" if x >= 10 else f"{x:.2g}" if x >= 0.01 else "< 0.01"


def emit(record: dict) -> None:
    """One JSON line on stdout, flushed (NaN becomes null, numpy scalars numbers)."""
    print(json.dumps(jsonable(record)), flush=True)


def jsonable(value):
    """``value`` with numpy scalars as numbers and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
