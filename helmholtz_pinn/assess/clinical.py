"""Clinical MRE quantities from the complex shear modulus (pure numpy).

From ``mu = G' + i G''`` (Pa) and the density ``rho`` (kg/m^3), per voxel and frequency:

- storage modulus ``G' = Re mu`` (Pa) and loss modulus ``G'' = Im mu`` (Pa);
- magnitude ``|G*| = sqrt(G'^2 + G''^2)`` (Pa);
- phase angle ``phi = arg G* = atan2(G'', G')`` (rad; 0 elastic, pi/2 purely viscous);
- shear-wave speed ``c = sqrt(2 |G*|^2 / (rho (|G*| + G')))`` (m/s);
- penetration rate ``a = sqrt(2 |G*|^2 / (rho (|G*| - G')))`` (m/s) and penetration
  depth ``a / omega`` (m), ``omega = 2 pi f``.

``c`` and ``a`` are the phase speed and the decay length times omega of a plane shear
wave with wavenumber ``k = omega sqrt(rho / G*)``: ``c = omega / Re k`` and
``a = omega / |Im k|`` (the amplitude falls by 1/e over ``a / omega``).

Limits, handled explicitly: a purely elastic voxel
(``G'' = 0``, ``G' > 0``) has ``c = sqrt(G'/rho)`` and no attenuation, ``a = inf``
(depth ``inf``); ``mu = 0`` gives ``c = 0`` and ``a = nan``. To avoid the cancellation
of ``|G*| - G'`` for small ``G''``, the code uses
``|G*| - G' = G''^2 / (|G*| + G')`` (and the mirror form for ``G' < 0``).

:func:`summaries` gives the per-region medians that ``metrics.json`` records under
``clinical``; :func:`nifti_maps` names the maps that ``Result.save(out, nifti=True)``
writes as ``OUT/maps/<quantity>_<unit>_<f>Hz.nii.gz``.
"""

from __future__ import annotations

import math

import numpy as np

from helmholtz_pinn import laws
from helmholtz_pinn.assess.metrics import finite_or_none as _finite
from helmholtz_pinn.assess.metrics import region_medians
from helmholtz_pinn.errors import InputError

# quantity -> (symbol, unit, unit as written in file names)
QUANTITIES = {
    "storage": ("G'", "Pa", "Pa"),
    "loss": ("G''", "Pa", "Pa"),
    "magnitude": ("|G*|", "Pa", "Pa"),
    "phase": ("phi", "rad", "rad"),
    "speed": ("c", "m/s", "m_per_s"),
    "penetration": ("a", "m/s", "m_per_s"),
    "depth": ("a/omega", "m", "m"),
}
UNITS = {name: unit for name, (_, unit, _) in QUANTITIES.items()}

__all__ = [
    "QUANTITIES",
    "UNITS",
    "model_parameters",
    "nifti_maps",
    "per_map",
    "quantities",
    "summaries",
]


def quantities(mu: np.ndarray, rho: float, frequency: float | None = None) -> dict[str, np.ndarray]:
    """The clinical quantities of a complex modulus map (equations in the module doc).

    Args:
      mu: complex shear modulus, Pa, any shape.
      rho: density, kg/m^3, > 0.
      frequency: drive frequency, Hz (> 0), of ``mu``; when given, the penetration
        depth ``a / (2 pi f)`` (m) is included.

    Returns:
      ``{"storage": G' (Pa), "loss": G'' (Pa), "magnitude": |G*| (Pa), "phase": phi
      (rad), "speed": c (m/s), "penetration": a (m/s)[, "depth": a/omega (m)]}``, each
      float64 of ``mu``'s shape; ``a`` (and the depth) is ``inf`` where ``G'' = 0``.
    """
    rho = float(rho)
    if not (rho > 0 and math.isfinite(rho)):
        raise InputError(f"rho must be a positive density in kg/m^3; got {rho!r}")
    mu = np.asarray(mu, dtype=np.complex128)
    g1, g2 = mu.real, mu.imag
    mag = np.abs(mu)
    with np.errstate(divide="ignore", invalid="ignore"):
        plus = np.where(g1 >= 0, mag + g1, g2**2 / (mag - g1))  # |G*| + G'
        minus = np.where(g1 >= 0, g2**2 / (mag + g1), mag - g1)  # |G*| - G'
        speed = np.sqrt(2 * mag**2 / (rho * plus))
        penetration = np.sqrt(2 * mag**2 / (rho * minus))
    speed = np.where(mag == 0, 0.0, speed)
    penetration = np.where((g2 == 0) & (g1 > 0), np.inf, penetration)
    out = {
        "storage": g1,
        "loss": g2,
        "magnitude": mag,
        "phase": np.arctan2(g2, g1),
        "speed": speed,
        "penetration": penetration,
    }
    if frequency is not None:
        f = float(frequency)
        if not (f > 0 and math.isfinite(f)):
            raise InputError(f"frequency must be positive, in Hz; got {frequency!r}")
        out["depth"] = penetration / (2 * np.pi * f)
    return out


def per_map(
    mu: np.ndarray, frequency: np.ndarray, rho: float, grid_ndim: int
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`quantities` of each map of ``mu``, keyed by its frequency label.

    ``mu`` is ``(F, *grid)`` (one map per frequency, labels like ``"60Hz"``) or ``grid``
    (one map; with F > 1 frequencies it is a compound estimate, labelled ``"60-90Hz"``
    and without a penetration depth, which needs one frequency).
    """
    mu = np.asarray(mu)
    freqs = np.atleast_1d(np.asarray(frequency, dtype=np.float64))
    if mu.ndim == grid_ndim:
        if len(freqs) == 1:
            return {f"{freqs[0]:g}Hz": quantities(mu, rho, freqs[0])}
        return {f"{freqs.min():g}-{freqs.max():g}Hz": quantities(mu, rho)}
    if mu.ndim != grid_ndim + 1 or mu.shape[0] != len(freqs):
        raise InputError(
            f"mu must have shape grid or (F, *grid) with F = {len(freqs)} frequencies; "
            f"got {mu.shape} for a {grid_ndim}-D grid"
        )
    return {f"{f:g}Hz": quantities(m, rho, f) for m, f in zip(mu, freqs, strict=True)}


def summaries(
    mu: np.ndarray,
    frequency: np.ndarray,
    rho: float,
    mask: np.ndarray,
    regions: np.ndarray | None = None,
    mu_model: str | None = None,
) -> dict:
    """The ``clinical`` entry of ``metrics.json``: medians of every quantity.

    Returns a JSON-safe dict (non-finite medians, e.g. ``a = inf`` of an elastic
    region, are None)::

        {"units": {"storage": "Pa", ...}, "rho_kg_m3": 1000.0,
         "mask": {"60Hz": {"storage": 3000.0, ...}},            # median over the mask
         "regions": {"60Hz": {"1": {"storage": ...}, "2": ...}}}  # with region labels

    Medians are taken inside ``mask``; ``regions`` (labels >= 1, shape ``grid``) adds
    one entry per label found in the mask. A fit of a law with parameters (``mu_model``) adds
    ``"model": {"name": ..., "units": ..., "mask": {...}, "regions": {...}}`` with the
    medians of its parameters (:func:`model_parameters`).
    """
    mask = np.asarray(mask, dtype=bool)
    maps = per_map(mu, frequency, rho, mask.ndim)
    out: dict = {"units": dict(UNITS), "rho_kg_m3": float(rho), "mask": {}}
    for label, values in maps.items():
        out["mask"][label] = {q: _median(v[mask]) for q, v in values.items()}
    if regions is not None:
        out["regions"] = {}
        for label, values in maps.items():
            by_region: dict[str, dict] = {}
            for q, v in values.items():
                for region, median in region_medians(v, regions, mask).items():
                    by_region.setdefault(str(region), {})[q] = _finite(median)
            out["regions"][label] = by_region
    params = model_parameters(mu, frequency, mu_model)
    if params:
        units = {k: laws.get(mu_model).maps[k].unit for k in params}
        entry = {"name": mu_model, "units": units}
        entry["mask"] = {k: _median(v[mask]) for k, v in params.items()}
        if regions is not None:
            entry["regions"] = {}
            for k, v in params.items():
                for region, median in region_medians(v, regions, mask).items():
                    entry["regions"].setdefault(str(region), {})[k] = _finite(median)
        out["model"] = entry
    return out


def nifti_maps(
    mu: np.ndarray, frequency: np.ndarray, rho: float, grid_ndim: int, mu_model: str | None = None
) -> dict[str, tuple[np.ndarray, str]]:
    """``{file stem: (map, description)}`` for ``OUT/maps/<stem>.nii.gz``.

    Stems are ``<quantity>_<unit>_<label>``, e.g. ``storage_Pa_60Hz``,
    ``speed_m_per_s_60Hz``, ``phase_rad_60Hz`` (labels as in :func:`per_map`); the
    description (NIfTI ``descrip``, at most 80 characters) names the quantity and its
    unit, e.g. ``"storage G' in Pa, 60Hz"`` (NIfTI has no unit field for intensities).
    A fit of a law with parameters adds their maps (:func:`model_parameters`), e.g.
    ``viscosity_Pa_s``.
    """
    out = {}
    for label, values in per_map(mu, frequency, rho, grid_ndim).items():
        for q, v in values.items():
            symbol, unit, tag = QUANTITIES[q]
            out[f"{q}_{tag}_{label}"] = (v, f"{q} {symbol} in {unit}, {label}"[:80])
    for name, v in model_parameters(mu, frequency, mu_model).items():
        symbol, unit, tag = laws.get(mu_model).maps[name]
        out[f"{name}_{tag}"] = (v, f"{mu_model} {symbol} in {unit}")
    return out


def model_parameters(mu: np.ndarray, frequency: np.ndarray, mu_model: str | None) -> dict:
    """The parameters of the law ``mu_model`` read off a fitted modulus ``mu`` (F, *grid)
    in Pa, one map each (:attr:`helmholtz_pinn.laws.Law.read`; units in its ``maps``).
    Empty for a law with none (per-frequency moduli), for a baseline, with fewer
    frequencies than the law needs, or for a single map."""
    mu, freqs = np.asarray(mu), np.atleast_1d(np.asarray(frequency, dtype=np.float64))
    if mu_model not in laws.available() or mu.ndim < 2 or mu.shape[0] != len(freqs):
        return {}
    law = laws.get(mu_model)
    if law.read is None or len(freqs) < law.min_frequencies:
        return {}
    return law.read(mu, 2 * np.pi * freqs)


def _median(values: np.ndarray) -> float | None:
    return _finite(np.median(values)) if values.size else None
