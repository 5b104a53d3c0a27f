"""A clinical-like case: a box, its tissue, targets, organ and drivers, and its checks.

Lengths in m, positions as fractions of the box, frequencies in Hz; each region's tissue
is a viscoelastic law's parameters (:mod:`helmholtz_pinn.laws`, e.g.
``Springpot(3e3, 0.2)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from helmholtz_pinn import laws
from helmholtz_pinn.errors import InputError

FACES = ("x0", "x1", "y0", "y1", "z0", "z1")  # axis letter, 0 (at 0) or 1 (at L)
SHAPES = ("sphere", "ellipsoid")
MAX_DOFS = 60_000  # default mesh limit: about 10-20 s per frequency for a CPU's sparse LU


class Target(NamedTuple):
    """A uniform 3-D target: ``shape`` "sphere" or "ellipsoid", ``centre`` as fractions of
    the box (x, y, z), ``semi_axes`` m (the body axes before rotation), its ``law``, and
    ``angles`` (rad): rotations about x, then y, then z, ``R = R_z R_y R_x``."""

    shape: str
    centre: tuple[float, float, float]
    semi_axes: tuple[float, float, float]
    law: tuple  # the parameters of a law (helmholtz_pinn.laws)
    angles: tuple[float, float, float] = (0.0, 0.0, 0.0)


def sphere(centre: Sequence[float], radius: float, law: tuple) -> Target:
    """A spherical :class:`Target` of ``radius`` m at ``centre`` (fractions of the box)."""
    return Target("sphere", tuple(centre), (radius,) * 3, law)


class Organ(NamedTuple):
    """Axis-aligned ellipsoid of ``semi_axes`` m at ``centre`` (fractions of the box) whose
    radius is multiplied by ``1 + p(n)``, ``p`` a polynomial of the unit direction ``n`` of
    degree 1..``degree`` with coefficients drawn from ``seed`` and scaled to
    ``max |p| = roughness``."""

    semi_axes: tuple[float, float, float]
    roughness: float = 0.1
    seed: int = 0
    centre: tuple[float, float, float] = (0.5, 0.5, 0.5)
    degree: int = 3


class Driver(NamedTuple):
    """A disc of ``radius`` m on box ``face`` (:data:`FACES`) around ``centre`` (fractions
    of the face's two other axes, in x, y, z order) moving as ``u = amplitude exp(i phase)``
    (``amplitude`` 3 components, the length unit of ``u``; ``phase`` rad)."""

    face: str
    centre: tuple[float, float]
    radius: float
    amplitude: tuple[float, float, float]
    phase: float = 0.0


class ClinicalCase(NamedTuple):
    """A phantom: a box of ``shape`` voxels of ``spacing`` m; ``frequencies`` Hz; the
    ``background`` law scaled by ``gradient`` (module doc); ``targets``; the ``organ`` (the
    data mask); ``drivers``; the noise ``seed``; ``rho`` kg/m^3 and Lame ``lam`` Pa;
    ``mesh_size`` m (None: :func:`mesh_size`, from ``elements_per_wavelength`` within
    ``max_dofs``)."""

    description: str
    shape: tuple[int, int, int]
    spacing: float
    frequencies: tuple[float, ...]
    background: tuple
    targets: tuple[Target, ...]
    organ: Organ
    drivers: tuple[Driver, ...]
    gradient: tuple[float, float, float] = (0.0, 0.0, 0.0)
    seed: int = 0
    rho: float = 1000.0
    lam: float = 1e6
    mesh_size: float | None = None
    elements_per_wavelength: float = 8.0
    max_dofs: int | None = MAX_DOFS


def extent(case: ClinicalCase) -> np.ndarray:
    """Box size ``shape * spacing`` (3,) m."""
    return np.asarray(case.shape, float) * case.spacing


def _check_vector(name: str, value, length: int, ok, expected: str) -> np.ndarray:
    """``value`` as a float array of ``length`` or :class:`InputError` quoting it."""
    try:
        a = np.asarray(value, float).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {expected}; got {value!r}") from None
    if a.size != length or not (np.isfinite(a).all() and ok(a).all()):
        raise InputError(f"{name} must be {expected}; got {value!r}")
    return a


def _check_target(i: int, t: Target, box: np.ndarray, margin: float) -> None:
    name = f"target {i}"
    if not isinstance(t, Target) or t.shape not in SHAPES:
        raise InputError(f"{name} must be a Target of shape {SHAPES}; got {t!r}")
    centre = _check_vector(
        f"{name} centre",
        t.centre,
        3,
        lambda a: (a >= 0) & (a <= 1),
        "3 fractions of the box in [0, 1]",
    )
    axes = _check_vector(f"{name} semi_axes", t.semi_axes, 3, lambda a: a > 0, "3 lengths > 0 m")
    _check_vector(f"{name} angles", t.angles, 3, np.isfinite, "3 angles in rad")
    if t.shape == "sphere" and np.ptp(axes) > 0:
        raise InputError(f"{name} is a sphere but has unequal semi_axes {t.semi_axes!r}")
    laws.check(t.law, f"{name} law")
    c, r = centre * box, axes.max() + margin
    if (c - r < 0).any() or (c + r > box).any():
        raise InputError(
            f"{name} (semi-axes {t.semi_axes!r} m at {t.centre!r} of the box) does not fit "
            f"the {box[0]:g} x {box[1]:g} x {box[2]:g} m box with a margin of {margin:g} m"
        )


def _check_organ(organ: Organ, box: np.ndarray, margin: float) -> None:
    if not isinstance(organ, Organ):
        raise InputError(f"organ must be an Organ; got {organ!r}")
    axes = _check_vector("organ semi_axes", organ.semi_axes, 3, lambda a: a > 0, "3 lengths > 0 m")
    centre = _check_vector(
        "organ centre",
        organ.centre,
        3,
        lambda a: (a >= 0) & (a <= 1),
        "3 fractions of the box in [0, 1]",
    )
    if not (0 <= organ.roughness < 0.5 and int(organ.degree) == organ.degree >= 1):
        raise InputError(f"organ needs roughness in [0, 0.5) and degree >= 1; got {organ!r}")
    reach = axes * (1 + organ.roughness) + margin
    if (centre * box - reach < 0).any() or (centre * box + reach > box).any():
        raise InputError(
            f"organ (semi-axes {organ.semi_axes!r} m, roughness {organ.roughness:g}) does not "
            f"fit the {box[0]:g} x {box[1]:g} x {box[2]:g} m box with a margin of {margin:g} m"
        )


def _check_driver(i: int, d: Driver) -> None:
    name = f"driver {i}"
    if not isinstance(d, Driver) or d.face not in FACES:
        raise InputError(f"{name} must be a Driver on a face of {FACES}; got {d!r}")
    _check_vector(
        f"{name} centre",
        d.centre,
        2,
        lambda a: (a >= 0) & (a <= 1),
        "2 fractions of the face in [0, 1]",
    )
    _check_vector(f"{name} radius", d.radius, 1, lambda a: a > 0, "a length > 0 m")
    amp = _check_vector(
        f"{name} amplitude", d.amplitude, 3, np.isfinite, "3 finite amplitudes (x, y, z)"
    )
    _check_vector(f"{name} phase", d.phase, 1, np.isfinite, "a finite phase in rad")
    if not amp.any():
        raise InputError(f"{name} amplitude must not be all zero; got {d.amplitude!r}")


def check_case(case: ClinicalCase) -> None:
    """Eager checks of every field of ``case``; each message quotes the bad value."""
    if not isinstance(case, ClinicalCase):
        raise InputError(f"case must be a ClinicalCase or a name in FAMILY; got {case!r}")
    shape = case.shape
    if len(shape) != 3 or any(int(n) != n or n < 3 for n in shape):
        raise InputError(f"shape must be 3 integers >= 3 voxels (nx, ny, nz); got {shape!r}")
    _check_vector("spacing", case.spacing, 1, lambda a: a > 0, "a voxel size > 0 m")
    freqs = np.asarray(case.frequencies, float).reshape(-1)
    if freqs.size == 0 or not (np.isfinite(freqs).all() and (freqs > 0).all()):
        raise InputError(f"frequencies must be positive (Hz); got {case.frequencies!r}")
    laws.check(case.background, "background law")
    g = _check_vector("gradient", case.gradient, 3, np.isfinite, "3 finite relative changes")
    if np.abs(g).sum() >= 2:
        raise InputError(
            f"gradient must keep the modulus positive (sum |g| < 2); got {case.gradient!r}"
        )
    moduli = dict(rho=case.rho, lam=case.lam, elements_per_wavelength=case.elements_per_wavelength)
    if case.mesh_size is not None:
        moduli["mesh_size"] = case.mesh_size
    if case.max_dofs is not None:
        moduli["max_dofs"] = case.max_dofs
    bad = {k: v for k, v in moduli.items() if not (np.isfinite(v) and v > 0)}
    if bad:
        raise InputError(
            f"rho, lam, elements_per_wavelength, mesh_size and max_dofs must be > 0; got {bad}"
        )
    box = extent(case)
    for i, t in enumerate(case.targets):
        _check_target(i, t, box, case.spacing)
    _check_organ(case.organ, box, case.spacing)
    if not case.drivers:
        raise InputError("drivers must hold at least one Driver; got none")
    for i, d in enumerate(case.drivers):
        _check_driver(i, d)
