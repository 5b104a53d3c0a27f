"""Number formatting and JSON-line output shared by the accuracy study's scalar part
(``accuracy.py``) and elastic part (``accuracy_elastic.py``)."""

from __future__ import annotations

import json
import math

import helmholtz_pinn as hp
from helmholtz_pinn import lab


def noise_label(noise_db: float | None) -> str:
    """``clean`` or ``-20 dB``."""
    return "clean" if noise_db is None else f"{noise_db:g} dB"


def pct(x, digits: int = 1, missing: str = "n/a") -> str:
    """A fraction as a percentage; ``missing`` for None or non-finite."""
    if x is None or not math.isfinite(x):
        return missing
    return f"{round(100 * x, digits) + 0.0:.{digits}f} %"  # + 0.0: no "-0 %"


def num(x, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None or not math.isfinite(x) else fmt.format(x)


def seconds(x) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.1f}" if x >= 10 else f"{x:.2g}" if x >= 0.01 else "< 0.01"


def scores(mu, dataset, *keys: str) -> dict:
    """A map's numbers against the truth (``hp.evaluate``, first frequency: the G' of
    Voigt truth is the same at every frequency): ``keys`` of them, ``contrast_transfer``
    and all of them under ``metrics``."""
    m = hp.evaluate(mu, dataset)
    m.pop("per_frequency", None)
    return {**{k: m.get(k) for k in keys}, "contrast_transfer": m.get("contrast_transfer", {}),
            "metrics": m}  # fmt: skip


def emit(record: dict) -> None:
    """One JSON line on stdout, flushed (NaN becomes null, numpy scalars numbers)."""
    print(json.dumps(lab.jsonable(record)), flush=True)
