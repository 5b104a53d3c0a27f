"""Plausibility at the door: is a dataset MRE physics in the documented units?

Checked once per dataset before any fit (:func:`check`, called by
:func:`helmholtz_pinn.fit.inversion.invert` and the ``baseline`` command), each failure an
:class:`~helmholtz_pinn.errors.InputError` that names the likely unit mistake; ``force``
turns the failures into notes. The bounds (module constants, docs/data-format.md):

- frequency f in [1 Hz, 10 kHz] (MRE drives 10-1000 Hz, microscopic MRE a few kHz):
  f < 1 Hz reads as kHz (0.06 -> 60 Hz), f > 10 kHz or f = 2 pi x a round number of Hz
  as rad/s (376.99 -> 60 Hz);
- spacing h in [1 um, 5 cm] (MRI voxels 0.05-10 mm): h > 5 cm reads as mm given as m,
  h < 1 um as a double conversion;
- the data's shear wavelength lambda = sqrt(|mu_est| / rho) / f, mu_est (Pa) from
  :func:`helmholtz_pinn.assess.baselines.estimate_modulus`: at least 2 voxels (h_max) per
  wavelength at f_max, at most 50 fields of view at f_min, and the implied |mu_est| in
  [10 Pa, 1 MPa] (soft matter: 0.1-100 kPa); skipped where no estimate is possible.
  lambda in voxels is the wave the data shows, whatever the units; the implied modulus
  carries the units (f in kHz scales it by 1e-6, mm given as m by 1e6);
- components: none may be zero or numerically negligible (RMS in the mask below 1e-6 of
  the strongest component's at that frequency); :func:`drop_empty_components` drops
  those empty at every frequency. NaN outside the mask is filled with 0 by
  :class:`~helmholtz_pinn.io.dataset.Dataset`; NaN inside is refused there.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset

FREQUENCY_HZ = (1.0, 10_000.0)
SPACING_M = (1e-6, 0.05)
MODULUS_PA = (10.0, 1e6)
MIN_VOXELS_PER_WAVELENGTH = 2.0
MAX_WAVELENGTH_FOV = 50.0
NEGLIGIBLE = 1e-6  # component RMS / strongest component RMS at that frequency
OVERRIDE = "pass force=True if the values are right"

__all__ = ["check", "drop_empty_components", "empty_components", "estimate"]


def check(dataset: Dataset, *, force: bool = False, modulus: float | None = None) -> list[str]:
    """Problems of ``dataset`` against MRE physics (see the module docstring).

    ``modulus``: the data's AHI estimate (Pa) when the caller has it (:func:`estimate`),
    else it is estimated here.

    Returns notes: empty without problems; with ``force`` every problem as a note
    ("plausibility check overridden (force): ..."). Raises InputError listing every
    problem (with the likely unit mistake) unless ``force``.
    """
    problems = _frequency(dataset.frequency) + _spacing(dataset.spacing)
    problems += _components(dataset)
    if not problems:  # the wave check needs a signal in every frequency
        problems += _wave(dataset, estimate(dataset) if modulus is None else modulus)
    if problems and not force:
        raise InputError(f"implausible dataset: {'; '.join(problems)}; {OVERRIDE}")
    return [f"plausibility check overridden (force): {p}" for p in problems]


def _in(value: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def _g(x: float) -> str:
    return f"{x:.4g}"


def _list(values, unit: str = "") -> str:
    return ", ".join(_g(v) for v in values) + (f" {unit}" if unit else "")


def _frequency(freqs: np.ndarray) -> list[str]:
    lo, hi = FREQUENCY_HZ
    freqs = [float(f) for f in freqs]
    khz = [f for f in freqs if f < lo]
    rad = [f for f in freqs if f > hi or _round_in_rad_s(f)]
    problems = []
    if khz:
        fits = all(_in(f * 1e3, FREQUENCY_HZ) for f in khz)
        hint = "looks like kHz: " + ", ".join(f"{_g(f)} -> {_g(f * 1e3)} Hz" for f in khz)
        problems.append(
            f"frequency {_list(khz, 'Hz')} below {_g(lo)} Hz; "
            + (hint + "?" if fits else "check its unit (Hz)")
        )
    if rad:
        fits = all(_in(f / (2 * math.pi), FREQUENCY_HZ) for f in rad)
        hint = ", ".join(_g(f / (2 * math.pi)) for f in rad)
        why = f"above {_g(hi)} Hz" if max(rad) > hi else "2 pi times a whole number of Hz"
        problems.append(
            f"frequency {_list(rad)} {why}; "
            + (f"{_list(rad)} looks like rad/s: {hint} Hz?" if fits else "check its unit (Hz)")
        )
    return problems


def _round_in_rad_s(f: float) -> bool:
    """True when f is not a multiple of 0.5 Hz but f / 2 pi is a whole number of Hz
    (to 1e-6): a drive frequency converted to rad/s."""
    rad = f / (2 * math.pi)
    off_grid = abs(f * 2 - round(f * 2)) > 1e-6
    return off_grid and round(rad) >= 1 and abs(rad - round(rad)) < 1e-6 * rad


def _spacing(spacing: np.ndarray) -> list[str]:
    lo, hi = SPACING_M
    h = [float(x) for x in spacing]
    if max(h) > hi:
        return [
            f"spacing {_list(h, 'm')} above {_g(hi * 1e3)} mm; {_list(h, 'm')} looks like mm: "
            f"{_list([x * 1e-3 for x in h], 'm')}?"
        ]
    if min(h) < lo:
        return [
            f"spacing {_list(h, 'm')} below 1 um; converted twice (um or mm)? "
            f"{_list([x * 1e3 for x in h], 'm')}?"
        ]
    return []


def _rms(dataset: Dataset) -> np.ndarray:
    """(F, C) RMS of u in the mask."""
    u = dataset.u[..., dataset.mask]
    return np.sqrt(np.mean(np.abs(u) ** 2, axis=-1))


def _empty(dataset: Dataset) -> np.ndarray:
    """(F, C) bool: the component is zero or below NEGLIGIBLE of the strongest one."""
    rms = _rms(dataset)
    return (rms == 0) | (rms < NEGLIGIBLE * rms.max(axis=1, keepdims=True))


def empty_components(dataset: Dataset) -> list[int]:
    """Components (0-based) that are empty (zero or negligible) at every frequency."""
    return [int(c) for c in np.flatnonzero(_empty(dataset).all(axis=0))]


def _components(dataset: Dataset) -> list[str]:
    empty, rms = _empty(dataset), _rms(dataset)
    problems = []
    dead = empty.all(axis=1)
    if dead.any():
        problems.append(
            f"u is zero in the mask for every component at {_list(dataset.frequency[dead], 'Hz')}"
            ": remove those frequencies"
        )
    for c in np.flatnonzero(empty[~dead].any(axis=0)):
        at = empty[:, c] & ~dead
        ratio = float(np.max(rms[at, c] / rms[at].max(axis=1)))
        what = "all zero" if ratio == 0 else f"negligible (RMS {ratio:.1e} of the strongest)"
        problems.append(
            f"component {c} (0-based) is {what} in the mask at "
            f"{_list(dataset.frequency[at], 'Hz')}: drop it if it is empty at every "
            "frequency (drop_empty_components=True)"
        )
    return problems


def drop_empty_components(dataset: Dataset) -> tuple[Dataset, list[int]]:
    """``dataset`` without the components that are empty at every frequency, and their
    indices (0-based). Raises InputError when a component is empty at some frequencies
    only, or when every component is empty."""
    empty = _empty(dataset)
    drop = empty_components(dataset)
    partial = [int(c) for c in np.flatnonzero(empty.any(axis=0) & ~empty.all(axis=0))]
    if partial:
        c = partial[0]
        at = [_g(f) for f in dataset.frequency[empty[:, c]]]
        raise InputError(
            f"component {c} (0-based) is empty at {', '.join(at)} Hz but not at every "
            "frequency, so it cannot be dropped: remove those frequencies, or pass force=True"
        )
    if len(drop) == dataset.n_comp:
        raise InputError("every component of u is zero in the mask: nothing to fit")
    if not drop:
        return dataset, []
    keep = [c for c in range(dataset.n_comp) if c not in drop]
    return dataclasses.replace(dataset, u=dataset.u[:, keep]), drop


def estimate(dataset: Dataset) -> float | None:
    """The data's modulus estimate in Pa (:func:`baselines.estimate_modulus`), or None
    where none is possible (e.g. a mask too thin for the stencil, a constant field)."""
    from helmholtz_pinn.assess.baselines import estimate_modulus

    try:
        return estimate_modulus(dataset)
    except ValueError:
        return None


def _wave(dataset: Dataset, mu: float | None) -> list[str]:
    if mu is None:  # nothing to judge here
        return []
    cause = "check that frequency is in Hz and spacing in m"
    problems = []
    speed = math.sqrt(mu / dataset.rho)  # m/s
    h = float(np.max(dataset.spacing))
    fov = max((n - 1) * s for n, s in zip(dataset.grid, dataset.spacing, strict=True))
    f_lo, f_hi = float(np.min(dataset.frequency)), float(np.max(dataset.frequency))
    short, long = speed / f_hi, speed / f_lo
    if short / h < MIN_VOXELS_PER_WAVELENGTH:
        problems.append(
            f"the shear wavelength at {_g(f_hi)} Hz is {_g(short * 1e3)} mm = {short / h:.2g} "
            f"voxels (< {MIN_VOXELS_PER_WAVELENGTH:g}): no resolved wave, the field is noise "
            f"or aliased; {cause}"
        )
    if long / fov > MAX_WAVELENGTH_FOV:
        problems.append(
            f"the shear wavelength at {_g(f_lo)} Hz is {_g(long * 1e3)} mm = {long / fov:.3g} "
            f"fields of view (> {MAX_WAVELENGTH_FOV:g}): no wave in the field; {cause}"
        )
    if not _in(mu, MODULUS_PA):
        problems.append(_modulus(dataset, mu, short, h))
    return problems


def _modulus(dataset: Dataset, mu: float, wavelength: float, h: float) -> str:
    """The implied-modulus problem, with the unit reading that makes it plausible."""
    lo, hi = MODULUS_PA
    f_hi = float(np.max(dataset.frequency))
    readings = {  # how each unit slip scales mu = rho (f lambda)^2, lambda in voxels * h
        "frequency in kHz (x 1000)": 1e6,
        "frequency in rad/s (/ 2 pi)": (2 * math.pi) ** -2,
        "spacing in mm given as m (/ 1000)": 1e-6,
        "spacing 1000x too small (x 1000)": 1e6,
    }
    likely = [k for k, s in readings.items() if _in(mu * s, MODULUS_PA)]
    cause = " or ".join(likely) if likely else "frequency not in Hz or spacing not in m"
    return (
        f"the data's wave ({_g(wavelength * 1e3)} mm = {wavelength / h:.3g} voxels per "
        f"wavelength at {_g(f_hi)} Hz) implies |mu| = {_g(mu)} Pa, outside {_g(lo)} Pa-"
        f"{_g(hi / 1e3)} kPa; plausible if: {cause}"
    )
