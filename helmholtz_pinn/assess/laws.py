"""Which viscoelastic law the data follow: springpot, Voigt, or neither.

Two laws describe how the complex shear modulus mu(omega) (Pa) of soft tissue changes
with the angular frequency omega = 2 pi f (rad/s):

    springpot:  mu = K (i omega / omega_0)^alpha            (K Pa, 0 < alpha < 1)
    Voigt:      mu = G' + i omega eta                       (G' Pa, eta Pa s)

The springpot (power law) lets G' and G'' grow as f^alpha at a constant phase angle
alpha pi / 2; Voigt keeps G' constant and lets G'' grow as f. The evidence is the fit's
own: after a fit with a law, :mod:`helmholtz_pinn.pinn.dispersion` finds the complex
factor c_f per frequency on the fitted modulus that best satisfies the PDE for the
fitted wave, and the law's *spread*, max_f |c_f / mean(c) - 1|, says how far the wave at
some frequency wants a modulus the law cannot give. A law that describes the data
leaves a spread of a few 1e-3; the wrong one several 1e-2 (docs/defaults.md has the
measurements behind :data:`SPREAD_MAX`).

``mu_model="auto"`` (:func:`next_law`) fits the springpot first and keeps it when its
spread is within :data:`SURE`: tissue follows a power law more often than Voigt, and a
clear pass is final. Otherwise it fits Voigt too and keeps the law of the lower spread,
unless even that one is above :data:`SPREAD_MAX`: then neither law describes the data
and the moduli are fitted per frequency (no law). The comparison, not a threshold alone,
decides every case that is not clear.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

ORDER = ("springpot", "voigt")  # the laws, in the order auto fits them
LAWS = ORDER
SURE = 0.01  # a first law this consistent is kept without trying the other
SPREAD_MAX = 0.02  # above this a law does not describe the data (the fit check's limit)


def next_law(tried: dict[str, float | None]) -> str | None:
    """The law to fit next given the spreads of the laws ``tried`` so far (in
    :data:`ORDER`), or None when the choice is made (:func:`chosen`)."""
    if not tried:
        return ORDER[0]
    if len(tried) == 1 and not sure(tried[ORDER[0]]):
        return ORDER[1]
    if len(tried) == 2 and not any(consistent(s) for s in tried.values()):
        return "per-frequency"
    return None


def chosen(tried: dict[str, float | None]) -> str:
    """The law kept: the last one fitted if it is per-frequency or the first was sure,
    else the law of the lower spread."""
    if "per-frequency" in tried or len(tried) == 1:
        return list(tried)[-1]
    return min(ORDER, key=lambda law: math.inf if tried[law] is None else tried[law])


def sure(spread: float | None) -> bool:
    """True when a law's spread is measured and within :data:`SURE`."""
    return spread is not None and spread <= SURE


def worst(spreads: Sequence[float | None]) -> float | None:
    """The largest finite spread of a batch's fits (one law for all), or None."""
    finite = [s for s in spreads if s is not None and math.isfinite(s)]
    return max(finite) if finite else None


def consistent(spread: float | None) -> bool:
    """True when a law's spread is measured and within :data:`SPREAD_MAX`."""
    return spread is not None and spread <= SPREAD_MAX


def rejected(law: str, spread: float | None, following: str) -> str:
    """The line that says another law is fitted after ``law``, and why."""
    measured = "not measured" if spread is None else f"{spread:.1%}"
    return (
        f"law: {law} leaves a spread of {measured} between frequencies (clear below "
        f"{SURE:.0%}, consistent below {SPREAD_MAX:.0%}); fitting {following}"
    )


def describe(chosen: str, tried: dict[str, float | None]) -> str:
    """One line for a log: the law kept and the spread of every law tried."""
    spreads = ", ".join(
        f"{law} {'-' if s is None else f'{s:.1%}'}" for law, s in tried.items() if law in ORDER
    )
    if chosen not in ORDER:
        why = f"no law within {SPREAD_MAX:.0%}"
    elif len(tried) == 1:
        why = f"within {SURE:.0%}"
    else:
        why = "the lower"
    return f"law: {chosen}, chosen by the data ({why}; spread {spreads})"
