"""Which viscoelastic law the data follow: springpot or Voigt.

Two laws describe how the complex shear modulus mu(omega) (Pa) of soft tissue changes
with the angular frequency omega = 2 pi f (rad/s):

    springpot:  mu = K (i omega / omega_0)^alpha            (K Pa, 0 < alpha < 1)
    Voigt:      mu = G' + i omega eta                       (G' Pa, eta Pa s)

The springpot (power law) lets G' and G'' grow as f^alpha at a constant phase angle
alpha pi / 2; Voigt keeps G' constant and lets G'' grow as f. The evidence is each fit's
own: :mod:`helmholtz_pinn.pinn.dispersion` finds the complex factor c_f per frequency on
the fitted modulus that best satisfies the PDE for the fitted wave, and the law's
*spread*, max_f |c_f / mean(c) - 1|, says how far the wave at some frequency wants a
modulus the law cannot give. The wrong law leaves the larger spread: 3-7x the right
law's on every tuning case (docs/defaults.md).

``mu_model="auto"`` fits both laws (:data:`ORDER`) and keeps the one of the lower
spread (:func:`chosen`; a tie goes to the springpot). Per-frequency moduli are not
chosen for several frequencies: on the three-component held-out volume they were 3.6x
worse than either law. A spread above the PDE form's ``spread_max`` (the navier form's
free pressure absorbs part of a wrong law's misfit, so its spreads are smaller) fails
the ``law_consistency`` fit check. The laws themselves: :mod:`helmholtz_pinn.laws`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from helmholtz_pinn import laws as registry

ORDER = registry.auto()  # the laws auto fits, in this order (a tie goes to the first)
# the laws whose fits have a spread: these and those holding several in one fit (an
# option: docs/defaults.md "One law holding both")
LAWS = registry.with_spread()
ONE_FREQUENCY = registry.resolve("auto", 1)  # what auto fits to one frequency


def worst(spreads: Sequence[float | None]) -> float | None:
    """The largest finite spread of a batch's fits (one law for all), or None."""
    finite = [s for s in spreads if s is not None and math.isfinite(s)]
    return max(finite) if finite else None


def chosen(tried: dict[str, float | None]) -> str:
    """The law of the lower measured spread among ``tried`` (a tie, or none measured:
    the first of :data:`ORDER` tried)."""
    laws = [law for law in ORDER if law in tried]
    return min(laws, key=lambda law: math.inf if tried[law] is None else tried[law])


def describe(kept: str, tried: dict[str, float | None], seconds: float | None = None) -> str:
    """One line for a log: the law kept, the spread of every law tried and, with
    ``seconds`` (all the fits' wall time), what naming the law would spare."""
    spreads = ", ".join(f"{law} {'-' if s is None else f'{s:.2%}'}" for law, s in tried.items())
    line = f"law: {kept}, chosen by the data (the lower spread between frequencies: {spreads})"
    if seconds is None or len(tried) < 2:
        return line
    return f"{line}; {len(tried)} fits in {seconds:.0f} s: mu_model={kept} fits this law alone"
