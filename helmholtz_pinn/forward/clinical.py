"""Clinical-like 3-D phantoms: an irregular organ with targets in a viscoelastic body.

The medium, the equation and its discretisation are those of
:mod:`helmholtz_pinn.forward.elastic` (time-harmonic Navier-Cauchy on P2 tetrahedra, time
convention ``Re(u exp(i omega t))``, lengths in m), with a complex shear modulus that
follows one of two tissue laws per region:

    Voigt:      mu = G' + i omega eta                   (G' Pa, eta Pa s)
    springpot:  mu = mu_0 (i omega / omega_0)^alpha     (mu_0 Pa, 0 < alpha < 1, omega_0 = 2 pi f_0)

so a springpot has ``G''/G' = tan(alpha pi / 2)`` and ``|mu| = mu_0 (f / f_0)^alpha``. The
background's modulus is scaled by a linear gradient ``s(x) = 1 + sum_k g_k (x_k / L_k - 1/2)``
(``g_k`` the relative change across the box along axis k); targets (spheres and rotated
ellipsoids, later ones win) are uniform. Since ``mu(x, f) = sum_r s_r(x) chi_r(x) mu_r(f)``
over the regions r, the stiffness of every frequency is a combination of real matrices
assembled once (:func:`assemble`):

    A_f = sum_r mu_r(f) K[s_r chi_r] + K[lambda] - omega^2 M + i omega C_f
        = K[G'_f] + i K[G''_f] + K[lambda] - omega^2 M + i omega C_f,

``C_f`` the dashpot of :func:`elastic.dashpot` with ``G'_f`` on every boundary facet (waves
leave the box as into surrounding tissue). Drivers are discs on the box faces where
``u = amplitude exp(i phase)`` (Dirichlet). The mesh edge is the
shortest shear wavelength ``sqrt(|mu| / rho) / f`` over regions and frequencies over
``elements_per_wavelength`` (8), coarsened to stay within ``max_dofs`` (:data:`MAX_DOFS`, so
that a CPU's sparse LU takes seconds, not minutes, per frequency; the members then have 5-7
P2 elements, 10-14 nodes, per shortest wavelength). The organ is an ellipsoid whose radius
is perturbed by a seeded polynomial of the direction of degree <= 3 (low-order angular
harmonics); the tissue around it (background law) is simulated too, but the data hold
``u`` only inside the organ: :func:`simulate_clinical` passes NaN outside it to
:class:`Dataset`, which stores those voxels as 0 with ``mask`` False there (the
convention for scanner data with a NaN background).

:data:`FAMILY` holds the named cases. The ``tune-*`` members (for choosing defaults) and the
``heldout-*`` members (for reporting accuracy only) differ in every respect a default could
be fitted to: target positions, sizes and shapes; background laws (springpot alpha
0.15-0.3, mu_0 2.5-3.5 kPa; Voigt 2.2-3 kPa, 1-2 Pa s) and target laws (1.4-8 kPa, alpha
0.15-0.4, eta 1-5 Pa s); voxel size (tune 1.5, 2.5, 3 mm;
held-out 2, 1.5, 2.5 mm); organ shape seed, drivers (faces, phases), gradient direction,
frequencies and noise seed. Each split has a Voigt-tissue member and a single-frequency
member; ``heldout-reference`` is a 64 x 64 x 32 mm block at 2 mm voxels in springpot tissue
``mu = 2.5 kPa (i omega / omega_0)^0.25`` with a stiff 16 mm sphere, a softer 14 mm sphere, a
stiff 8 mm sphere, an ellipsoid differing mostly in alpha, a background gradient, an
ellipsoidal organ and two phased drivers, at 30, 40 and 50 Hz.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse
from skfem import Basis, BilinearForm, MeshTet, asm
from skfem.helpers import div, dot

from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward import elastic, fem_solve
from helmholtz_pinn.forward.phantoms import add_noise
from helmholtz_pinn.io.dataset import Dataset

__all__ = [
    "FACES", "FAMILY", "ClinicalCase", "Driver", "Law", "Operators", "Organ", "Springpot",
    "Target", "Voigt", "assemble", "background_scale", "check_case", "driver_dofs",
    "law_modulus", "mesh_size", "modulus", "organ_mask", "region_labels", "simulate_clinical",
    "sphere", "springpot_from_storage", "system_matrix",
]  # fmt: skip

FACES = ("x0", "x1", "y0", "y1", "z0", "z1")  # axis letter, 0 (at 0) or 1 (at L)
SHAPES = ("sphere", "ellipsoid")
MAX_DOFS = 60_000  # default mesh limit: about 10-20 s per frequency for a CPU's sparse LU


# --------------------------------------------------------------------------- tissue laws


class Voigt(NamedTuple):
    """Voigt solid ``mu = G' + i omega eta``: ``storage`` ``G'`` Pa, ``viscosity`` ``eta`` Pa s."""

    storage: float
    viscosity: float


class Springpot(NamedTuple):
    """Power law ``mu = modulus (i f / reference_frequency)^alpha``: ``modulus`` ``mu_0`` Pa
    (``|mu|`` at ``f_0``), ``alpha`` in (0, 1), ``reference_frequency`` ``f_0`` Hz."""

    modulus: float
    alpha: float
    reference_frequency: float = 50.0


Law = Voigt | Springpot


def springpot_from_storage(
    storage: float, alpha: float, reference_frequency: float = 50.0
) -> Springpot:
    """The springpot whose ``G'`` at ``reference_frequency`` Hz is ``storage`` Pa:
    ``mu_0 = storage / cos(alpha pi / 2)`` (targets that differ only in viscosity)."""
    return Springpot(storage / math.cos(alpha * math.pi / 2), alpha, reference_frequency)


def check_law(law: object, name: str = "law") -> None:
    """Raise :class:`InputError` quoting ``law`` unless it is a valid Voigt or springpot."""
    if isinstance(law, Voigt):
        ok = np.isfinite(law).all() and law.storage > 0 and law.viscosity >= 0
        expected = "storage > 0 Pa and viscosity >= 0 Pa s"
    elif isinstance(law, Springpot):
        ok = np.isfinite(law).all() and law.modulus > 0 and law.reference_frequency > 0
        ok = ok and 0 < law.alpha < 1
        expected = "modulus > 0 Pa, alpha in (0, 1) and reference_frequency > 0 Hz"
    else:
        raise InputError(f"{name} must be a Voigt or a Springpot; got {law!r}")
    if not ok:
        raise InputError(f"{name} needs {expected}; got {law!r}")


def law_modulus(law: Law, frequency: float | np.ndarray) -> complex | np.ndarray:
    """Complex shear modulus ``mu`` (Pa) of ``law`` at ``frequency`` (Hz, > 0; a number or an
    array): ``G' + i 2 pi f eta`` (Voigt) or ``mu_0 (i f / f_0)^alpha`` (springpot)."""
    check_law(law)
    f = np.asarray(frequency, float)
    if not (np.isfinite(f).all() and (f > 0).all()):
        raise InputError(f"frequency must be > 0 Hz; got {f.tolist()!r}")
    if isinstance(law, Voigt):
        mu = law.storage + 1j * (2 * np.pi * f) * law.viscosity
    else:
        mu = law.modulus * (1j * f / law.reference_frequency) ** law.alpha
    return complex(mu) if f.ndim == 0 else mu


# --------------------------------------------------------------------------- geometry


class Target(NamedTuple):
    """A uniform 3-D target: ``shape`` "sphere" or "ellipsoid", ``centre`` as fractions of
    the box (x, y, z), ``semi_axes`` m (the body axes before rotation), its ``law``, and
    ``angles`` (rad): rotations about x, then y, then z, ``R = R_z R_y R_x``."""

    shape: str
    centre: tuple[float, float, float]
    semi_axes: tuple[float, float, float]
    law: Law
    angles: tuple[float, float, float] = (0.0, 0.0, 0.0)


def sphere(centre: Sequence[float], radius: float, law: Law) -> Target:
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
    background: Law
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


def _rotation(angles: Sequence[float]) -> np.ndarray:
    """``R = R_z(c) R_y(b) R_x(a)`` for ``angles = (a, b, c)`` rad."""
    a, b, c = angles
    rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    ry = np.array([[math.cos(b), 0, math.sin(b)], [0, 1, 0], [-math.sin(b), 0, math.cos(b)]])
    rz = np.array([[math.cos(c), -math.sin(c), 0], [math.sin(c), math.cos(c), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _body_coordinates(x: np.ndarray, centre: np.ndarray, semi_axes, angles) -> np.ndarray:
    """Points ``x`` (3, ...) m in the unit-sphere frame of an ellipsoid: ``R^T (x - c) / a``."""
    d = x - centre.reshape(3, *[1] * (x.ndim - 1))
    body = np.tensordot(_rotation(angles).T, d, axes=1)
    return body / np.asarray(semi_axes, float).reshape(3, *[1] * (x.ndim - 1))


def region_labels(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """Region at points ``x`` (3, ...) m: 1 background, ``2 + i`` inside target ``i`` (later
    targets win)."""
    out = np.ones(x.shape[1:], np.int64)
    box = extent(case)
    for label, t in enumerate(case.targets, start=2):
        p = _body_coordinates(x, np.asarray(t.centre) * box, t.semi_axes, t.angles)
        out[(p**2).sum(axis=0) <= 1.0] = label
    return out


def _exponents(degree: int) -> np.ndarray:
    """Exponents (a, b, c) of the monomials ``n_x^a n_y^b n_z^c`` of degree 1..``degree``."""
    e = [
        (a, b, k - a - b)
        for k in range(1, degree + 1)
        for a in range(k + 1)
        for b in range(k - a + 1)
    ]
    return np.array(e)


def _directions(count: int = 2000) -> np.ndarray:
    """``count`` nearly uniform unit vectors (3, count) (a Fibonacci sphere)."""
    k = np.arange(count) + 0.5
    z, phi = 1 - 2 * k / count, math.pi * (1 + math.sqrt(5)) * k
    r = np.sqrt(1 - z**2)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z])


def _monomials(n: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """Monomials of the directions ``n`` (3, ...): ``(terms, ...)``."""
    return np.stack([n[0] ** a * n[1] ** b * n[2] ** c for a, b, c in exponents])


def _radius_coefficients(organ: Organ) -> tuple[np.ndarray, np.ndarray]:
    """(exponents, coefficients) of the radius perturbation ``p(n)``: standard normal draws
    from ``organ.seed``, scaled so that ``max |p| = roughness`` over the unit sphere."""
    e = _exponents(organ.degree)
    c = np.random.default_rng(organ.seed).standard_normal(len(e))
    peak = np.abs(np.tensordot(c, _monomials(_directions(), e), axes=1)).max()
    return e, c * organ.roughness / peak


def organ_mask(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """True at points ``x`` (3, ...) m inside the organ: ``|q| <= 1 + p(q / |q|)`` with
    ``q = (x - c) / a`` (:class:`Organ`)."""
    organ = case.organ
    q = _body_coordinates(x, np.asarray(organ.centre) * extent(case), organ.semi_axes, (0, 0, 0))
    r = np.sqrt((q**2).sum(axis=0))
    e, c = _radius_coefficients(organ)
    n = q / np.where(r > 0, r, 1.0)
    return r <= 1.0 + np.tensordot(c, _monomials(n, e), axes=1)


def background_scale(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """``s(x) = 1 + sum_k g_k (x_k / L_k - 1/2)`` at points ``x`` (3, ...) m."""
    g, box = np.asarray(case.gradient, float), extent(case)
    return 1.0 + sum(g[k] * (x[k] / box[k] - 0.5) for k in range(3))


def _laws(case: ClinicalCase) -> tuple[Law, ...]:
    """Law of region ``r`` at index ``r - 1``."""
    return (case.background, *(t.law for t in case.targets))


def _coefficients(case: ClinicalCase, x: np.ndarray) -> list[np.ndarray]:
    """Real ``s_r chi_r`` at points ``x`` for every region r (the background scaled)."""
    labels = region_labels(case, x)
    scale = background_scale(case, x)
    return [
        np.where(labels == r, scale if r == 1 else 1.0, 0.0)
        for r in range(1, 2 + len(case.targets))
    ]


def modulus(case: ClinicalCase, x: np.ndarray, frequency: float) -> np.ndarray:
    """True complex modulus ``mu(x, f)`` (Pa) at points ``x`` (3, ...) m and ``frequency`` Hz."""
    parts = zip(_laws(case), _coefficients(case, x), strict=True)
    return sum(law_modulus(law, frequency) * c for law, c in parts)


# --------------------------------------------------------------------------- checks


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
    check_law(t.law, f"{name} law")
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
    check_law(case.background, "background law")
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


# --------------------------------------------------------------------------- assembly


_bulk = BilinearForm(lambda u, v, w: w.c * div(u) * div(v))
_mass = BilinearForm(lambda u, v, w: w.c * dot(u, v))


def _dofs(case: ClinicalCase, h: float) -> int:
    """Degrees of freedom of the P2 vector field on the box mesh of edge ``h`` m."""
    cubes = np.ceil(extent(case) / h - 1e-9)
    return int(3 * np.prod(2 * cubes + 1))


def mesh_size(case: ClinicalCase) -> float:
    """Element edge (m): ``case.mesh_size``, or the shortest shear wavelength
    ``sqrt(|mu| / rho) / f`` (softest region at its lowest scale, every frequency) divided
    by ``elements_per_wavelength``, coarsened where that mesh would exceed
    ``case.max_dofs`` degrees of freedom (None: no limit) to the finest one within it."""
    if case.mesh_size is not None:
        return float(case.mesh_size)
    h = _resolving_size(case)
    while case.max_dofs is not None and _dofs(case, h) > case.max_dofs:
        h *= 1.01
    return h


def _resolving_size(case: ClinicalCase) -> float:
    """Shortest shear wavelength (m) over regions and frequencies / elements per wavelength."""
    lowest = 1.0 - 0.5 * np.abs(np.asarray(case.gradient, float)).sum()
    f = np.asarray(case.frequencies, float)
    waves = [
        np.sqrt(np.abs(law_modulus(law, f)) * (lowest if r == 0 else 1.0) / case.rho) / f
        for r, law in enumerate(_laws(case))
    ]
    return float(np.min(waves)) / case.elements_per_wavelength


class Operators(NamedTuple):
    """Frequency-independent FE matrices (real CSR, SI units) of a case and their basis."""

    basis: Basis
    shear: tuple[sparse.csr_matrix, ...]  # K[s_r chi_r] of region r at index r - 1
    k_lambda: sparse.csr_matrix  # int lambda div u div v
    mass: sparse.csr_matrix  # int rho u.v
    absorbing: np.ndarray  # boundary facets with the dashpot (all of them)


def _target_cells(case: ClinicalCase, mesh: MeshTet, index: int) -> np.ndarray:
    """Elements whose bounding box meets the bounding sphere of target ``index``."""
    t = case.targets[index]
    centre, reach = np.asarray(t.centre) * extent(case), max(t.semi_axes)
    corners = mesh.p[:, mesh.t]  # (3, 4, elements)
    lo, hi = corners.min(axis=1), corners.max(axis=1)
    near = (lo <= centre[:, None] + reach) & (hi >= centre[:, None] - reach)
    return np.flatnonzero(near.all(axis=0))


def assemble(case: ClinicalCase, mesh: MeshTet) -> Operators:
    """The real matrices of :func:`system_matrix`, each quadrature exact for its integrand
    or, where a region boundary cuts an element, the order-4 rule of :func:`elastic.assemble`:
    ``K[s]`` (``s`` linear: order 3) less ``K[s chi_t]`` for each target t, ``K[chi_t]``
    (order 4 on the elements near t), ``K[lambda]`` (order 2) and ``M`` (order 4)."""
    elem = elastic.vector_basis(mesh).elem

    def basis(order: int, cells=None) -> Basis:
        return Basis(mesh, elem, intorder=order, elements=cells)

    def coordinates(b: Basis) -> np.ndarray:
        return np.asarray(b.global_coordinates())

    linear = basis(3)
    shear = [elastic.shear_stiffness(linear, background_scale(case, coordinates(linear)))]
    for i in range(len(case.targets)):
        cells = _target_cells(case, mesh, i)
        near = basis(4, cells)
        x = coordinates(near)
        inside = (region_labels(case, x) == i + 2).astype(float)
        shear[0] = shear[0] - elastic.shear_stiffness(near, inside * background_scale(case, x))
        shear.append(elastic.shear_stiffness(near, inside))
    quadratic, full = basis(2), basis(4)
    return Operators(
        quadratic,
        tuple(k.tocsr() for k in shear),
        asm(_bulk, quadratic, c=np.full(coordinates(quadratic).shape[1:], case.lam)).tocsr(),
        asm(_mass, full, c=np.full(coordinates(full).shape[1:], case.rho)).tocsr(),
        mesh.boundary_facets(),
    )


def system_matrix(case: ClinicalCase, ops: Operators, frequency: float) -> sparse.csr_matrix:
    """``A_f = sum_r mu_r(f) K[s_r chi_r] + K[lambda] - omega^2 M + i omega C_f`` (module
    doc), ``C_f`` the dashpot with ``G'_f = Re mu(x, f)`` on the absorbing facets."""
    omega = 2 * np.pi * frequency
    a = ops.k_lambda - omega**2 * ops.mass
    for law, k in zip(_laws(case), ops.shear, strict=True):
        a = a + law_modulus(law, frequency) * k
    if len(ops.absorbing):
        storage = lambda x: modulus(case, x, frequency).real  # noqa: E731
        a = a + 1j * omega * elastic.dashpot(ops.basis, ops.absorbing, storage, case.lam, case.rho)
    return a.tocsr()


def driver_dofs(case: ClinicalCase, basis: Basis) -> tuple[np.ndarray, np.ndarray]:
    """Dirichlet dofs and their complex values: every dof on a driver's disc moves with
    that driver (:class:`Driver`; a later driver wins where discs meet)."""
    box, at = extent(case), basis.doflocs
    comp = elastic.component_of_dofs(basis)
    values = np.full(basis.N, np.nan, complex)
    for i, d in enumerate(case.drivers):
        axis, side = "xyz".index(d.face[0]), float(d.face[1]) * box["xyz".index(d.face[0])]
        others = [k for k in range(3) if k != axis]
        on = np.isclose(at[axis], side, atol=1e-9 * box[axis])
        centre = np.asarray(d.centre, float) * box[others]
        r2 = sum((at[k] - c) ** 2 for k, c in zip(others, centre, strict=True))
        disc = on & (r2 <= d.radius**2 * (1 + 1e-12))
        if not disc.any():
            raise InputError(
                f"driver {i} ({d.radius:g} m on face {d.face!r} at {d.centre!r}) holds no mesh "
                "node; give it a larger radius or a finer mesh_size"
            )
        values[disc] = np.asarray(d.amplitude, float)[comp[disc]] * np.exp(1j * d.phase)
    dofs = np.flatnonzero(~np.isnan(values))
    return dofs, values[dofs]


# --------------------------------------------------------------------------- simulation


def _resolve(case: str | ClinicalCase) -> ClinicalCase:
    if isinstance(case, str):
        if case not in FAMILY:
            raise InputError(f"unknown clinical case {case!r}; valid: {', '.join(FAMILY)}")
        return FAMILY[case]
    return case


def _voxel_centres(case: ClinicalCase) -> np.ndarray:
    """Voxel centres (3, nx ny nz) m in C order."""
    axes = [(np.arange(n) + 0.5) * case.spacing for n in case.shape]
    return np.stack(np.meshgrid(*axes, indexing="ij")).reshape(3, -1)


def simulate_clinical(
    case: str | ClinicalCase,
    *,
    noise_db: float | None = None,
    seed: int | None = None,
    frequencies: Sequence[float] | None = None,
    precision: str = "double",
) -> Dataset:
    """Simulate a 3-D MRE acquisition of a :class:`ClinicalCase`.

    Args:
      case: a :class:`ClinicalCase`, or a name in :data:`FAMILY`.
      noise_db: noise-to-signal power ratio in dB, one level for all components
        (:func:`elastic.shared_noise`), relative to the mean power inside the organ;
        None: clean.
      seed: the noise's random seed; None: the case's.
      frequencies: drive frequencies, Hz; None: the case's.
      precision: "double" or "mixed", as for :func:`elastic.solve_system`.

    Returns:
      :class:`Dataset` with ``u`` complex64 ``(F, 3, nx, ny, nz)`` at the voxel centres
      (0 outside the organ: NaN passed to the Dataset), the true ``mu`` complex128
      ``(F, nx, ny, nz)`` Pa from each region's law at each frequency, ``regions``
      (1 background, 2.. targets), ``mask`` the organ and ``rho``.
    """
    case = _resolve(case)
    if frequencies is not None:
        case = case._replace(frequencies=tuple(float(f) for f in np.ravel(frequencies)))
    check_case(case)
    fem_solve.check_precision(precision)
    freqs = np.asarray(case.frequencies, float)
    ops = assemble(case, elastic.box_mesh(tuple(extent(case)), mesh_size(case)))
    dofs, values = driver_dofs(case, ops.basis)
    centres, grid = _voxel_centres(case), tuple(int(n) for n in case.shape)
    u = np.empty((freqs.size, 3, *grid), np.complex64)
    for i, f in enumerate(freqs):
        a = system_matrix(case, ops, f)
        field = elastic.solve_system(a, ops.basis.doflocs, dofs, values, precision)
        u[i] = elastic.sample(ops.basis, field, centres).reshape(3, *grid)
    mask = organ_mask(case, centres).reshape(grid)
    if noise_db is not None:
        inside = add_noise(
            u[:, :, mask].reshape(freqs.size, 1, -1), noise_db, case.seed if seed is None else seed
        )
        u[:, :, mask] = inside.reshape(freqs.size, 3, -1)
    u[:, :, ~mask] = np.nan
    return Dataset(
        u=u,
        frequency=freqs,
        spacing=np.full(3, float(case.spacing)),
        mask=mask,
        mu=np.stack([modulus(case, centres, f).reshape(grid) for f in freqs]),
        regions=region_labels(case, centres).reshape(grid),
        rho=float(case.rho),
    )


# --------------------------------------------------------------------------- family


MM = 1e-3
_REFERENCE_BACKGROUND = Springpot(2.5e3, 0.25)


def _storage_at_reference(law: Law) -> float:
    """``G'`` (Pa) of ``law`` at its reference frequency (50 Hz for a Voigt law)."""
    return law_modulus(law, getattr(law, "reference_frequency", 50.0)).real


FAMILY: dict[str, ClinicalCase] = {
    "tune-springpot": ClinicalCase(
        description="springpot tissue (3 kPa, alpha 0.2), y gradient, stiff sphere, soft "
        "rotated ellipsoid, a more viscous sphere (alpha 0.4); 2.5 mm voxels, 30/45/60 Hz",
        shape=(26, 26, 13),
        spacing=2.5 * MM,
        frequencies=(30.0, 45.0, 60.0),
        background=Springpot(3.0e3, 0.2),
        targets=(
            sphere((0.33, 0.62, 0.5), 7 * MM, Springpot(6.5e3, 0.2)),
            Target(
                "ellipsoid",
                (0.64, 0.36, 0.5),
                (9 * MM, 5 * MM, 5 * MM),
                Springpot(1.8e3, 0.25),
                (0.0, 0.0, 0.6),
            ),
            sphere(
                (0.64, 0.67, 0.45),
                5 * MM,
                springpot_from_storage(_storage_at_reference(Springpot(3.0e3, 0.2)), 0.4),
            ),
        ),
        organ=Organ((27.5 * MM, 27 * MM, 12.5 * MM), roughness=0.08, seed=11),
        drivers=(
            Driver("y0", (0.4, 0.5), 10 * MM, (1.0, 0.2, 0.3)),
            Driver("x0", (0.6, 0.5), 8 * MM, (0.3, 1.0, 0.2), 1.2),
        ),
        gradient=(0.0, 0.4, 0.0),
        seed=101,
    ),
    "tune-voigt": ClinicalCase(
        description="Voigt tissue (2.2 kPa, 2 Pa s), xy gradient, soft sphere, stiff tilted "
        "ellipsoid, a more viscous sphere (5 Pa s); 1.5 mm voxels, 40/50/60 Hz",
        shape=(42, 42, 21),
        spacing=1.5 * MM,
        frequencies=(40.0, 50.0, 60.0),
        background=Voigt(2.2e3, 2.0),
        targets=(
            sphere((0.35, 0.4, 0.5), 6 * MM, Voigt(1.4e3, 1.5)),
            Target(
                "ellipsoid",
                (0.62, 0.6, 0.5),
                (11 * MM, 6 * MM, 5 * MM),
                Voigt(5e3, 3.0),
                (0.3, 0.0, -0.5),
            ),
            sphere((0.36, 0.7, 0.5), 4.5 * MM, Voigt(2.2e3, 5.0)),
        ),
        organ=Organ((28 * MM, 28 * MM, 13 * MM), roughness=0.07, seed=12),
        drivers=(
            Driver("x1", (0.45, 0.5), 9 * MM, (0.2, 1.0, 0.3)),
            Driver("y1", (0.55, 0.5), 9 * MM, (1.0, 0.2, 0.3), -0.8),
        ),
        gradient=(0.3, 0.3, 0.0),
        seed=102,
    ),
    "tune-single": ClinicalCase(
        description="springpot tissue (3.5 kPa, alpha 0.3), diagonal gradient, stiff and soft "
        "spheres, a less viscous ellipsoid (alpha 0.15); 3 mm voxels, 50 Hz only",
        shape=(22, 22, 11),
        spacing=3 * MM,
        frequencies=(50.0,),
        background=Springpot(3.5e3, 0.3),
        targets=(
            sphere((0.32, 0.33, 0.5), 9 * MM, Springpot(8e3, 0.3)),
            sphere((0.7, 0.35, 0.5), 5 * MM, Springpot(2.0e3, 0.3)),
            Target(
                "ellipsoid",
                (0.5, 0.7, 0.5),
                (12 * MM, 5 * MM, 6 * MM),
                springpot_from_storage(_storage_at_reference(Springpot(3.5e3, 0.3)), 0.15),
                (0.0, 0.4, 0.3),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 12 * MM), roughness=0.06, seed=13),
        drivers=(
            Driver("z1", (0.5, 0.5), 12 * MM, (1.0, 0.5, 0.1)),
            Driver("y0", (0.5, 0.5), 8 * MM, (0.2, 0.3, 1.0), 2.0),
        ),
        gradient=(0.2, -0.2, 0.0),
        seed=103,
    ),
    "heldout-reference": ClinicalCase(
        description="64 x 64 x 32 mm at 2 mm, springpot tissue 2.5 kPa (i omega/omega_0)^0.25, "
        "x gradient +-20 %, stiff 16 mm, softer 14 mm and stiff 8 mm spheres, an ellipsoid "
        "of alpha 0.4 at the background's G', two phased drivers; 30/40/50 Hz",
        shape=(32, 32, 16),
        spacing=2 * MM,
        frequencies=(30.0, 40.0, 50.0),
        background=_REFERENCE_BACKGROUND,
        targets=(
            sphere((0.3, 0.35, 0.5), 8 * MM, Springpot(5.5e3, 0.25)),
            sphere((0.7, 0.3, 0.5), 7 * MM, Springpot(1.5e3, 0.25)),
            sphere((0.32, 0.7, 0.5), 4 * MM, Springpot(6e3, 0.25)),
            Target(
                "ellipsoid",
                (0.68, 0.68, 0.5),
                (10 * MM, 6 * MM, 5 * MM),
                springpot_from_storage(_storage_at_reference(_REFERENCE_BACKGROUND), 0.4),
                (0.0, 0.0, math.pi / 6),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 13 * MM), roughness=0.07, seed=7),
        drivers=(
            Driver("y0", (0.5, 0.5), 10 * MM, (1.0, 0.3, 0.2)),
            Driver("x1", (0.5, 0.5), 8 * MM, (0.2, 1.0, 0.4), math.pi / 2),
        ),
        gradient=(0.4, 0.0, 0.0),
        seed=201,
    ),
    "heldout-voigt": ClinicalCase(
        description="Voigt tissue (3 kPa, 1 Pa s), yz gradient, stiff tilted ellipsoid, soft "
        "sphere, a more viscous sphere (4 Pa s); 1.5 mm voxels, 35/50/65 Hz",
        shape=(42, 42, 21),
        spacing=1.5 * MM,
        frequencies=(35.0, 50.0, 65.0),
        background=Voigt(3.0e3, 1.0),
        targets=(
            Target(
                "ellipsoid",
                (0.4, 0.6, 0.5),
                (8 * MM, 12 * MM, 6 * MM),
                Voigt(7e3, 2.0),
                (0.5, 0.0, 0.8),
            ),
            sphere((0.65, 0.35, 0.5), 5 * MM, Voigt(1.6e3, 1.0)),
            sphere((0.68, 0.66, 0.5), 6 * MM, Voigt(3.0e3, 4.0)),
        ),
        organ=Organ((27.5 * MM, 27.5 * MM, 13 * MM), roughness=0.08, seed=21),
        drivers=(
            Driver("x0", (0.5, 0.5), 10 * MM, (1.0, 0.2, 0.2)),
            Driver("z1", (0.6, 0.4), 8 * MM, (0.3, 0.3, 1.0), -1.0),
        ),
        gradient=(0.0, -0.3, 0.2),
        seed=202,
    ),
    "heldout-single": ClinicalCase(
        description="springpot tissue (2.8 kPa, alpha 0.15), xyz gradient, stiff ellipsoid, "
        "soft sphere, a more viscous sphere (alpha 0.35); 2.5 mm voxels, 60 Hz only",
        shape=(26, 26, 13),
        spacing=2.5 * MM,
        frequencies=(60.0,),
        background=Springpot(2.8e3, 0.15),
        targets=(
            Target(
                "ellipsoid",
                (0.35, 0.62, 0.5),
                (11 * MM, 7 * MM, 6 * MM),
                Springpot(7e3, 0.15),
                (0.0, 0.3, -0.7),
            ),
            sphere((0.66, 0.36, 0.5), 6 * MM, Springpot(1.6e3, 0.2)),
            sphere(
                (0.36, 0.34, 0.5),
                5 * MM,
                springpot_from_storage(_storage_at_reference(Springpot(2.8e3, 0.15)), 0.35),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 12.5 * MM), roughness=0.06, seed=22),
        drivers=(
            Driver("y1", (0.5, 0.5), 10 * MM, (1.0, 0.3, 0.3)),
            Driver("z0", (0.4, 0.6), 9 * MM, (0.3, 1.0, 0.3), 2.5),
        ),
        gradient=(-0.2, 0.2, 0.2),
        seed=203,
    ),
}
