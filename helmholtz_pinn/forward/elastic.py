"""Elastic forward model: time-harmonic 3-D viscoelastic Navier-Cauchy by finite elements.

Time convention ``Re(u(x) exp(i omega t))`` as in :mod:`helmholtz_pinn.forward.phantoms`. The
complex displacement 3-vector ``u`` obeys

    -rho omega^2 u = div( 2 mu eps(u) + lambda tr(eps(u)) I ),   eps(u) = (grad u + grad u^T)/2

with the complex shear modulus ``mu`` of each region's viscoelastic law
(:mod:`helmholtz_pinn.laws`) at that frequency, written ``mu = G' + i omega eta`` with
``G' = Re mu`` (Pa) and ``eta = Im mu / omega`` (Pa s; for a Voigt solid its viscosity,
the same at every frequency), a real Lame ``lambda`` (Pa; large, nearly incompressible,
but the compressional wave stays), ``rho`` in kg/m^3 and ``omega = 2 pi f`` in rad/s.
Lengths are in m.

Discretisation (scikit-fem): vector quadratic tetrahedra on a structured box mesh. The
stiffness is linear in the moduli, so the real matrices ``K[G']``, ``K[eta]``,
``K[lambda]``, the mass ``M`` (and a boundary dashpot ``C``) are assembled with the
coefficient fields evaluated at the quadrature points, and every frequency solves

    (K[G'] + i omega K[eta] + K[lambda] - omega^2 M + i omega C) u = 0,  u = u_D on Dirichlet dofs

(complex symmetric, sparse direct LU). ``K[lambda]`` and ``M`` are assembled once;
``K[G']``, ``K[eta]`` and ``C`` again at a frequency where the law's ``G'`` or ``eta``
differ from the previous frequency's (a Voigt medium: once). :func:`simulate_elastic`
drives a slab phantom on its ``y = 0`` face and returns ``u`` at the voxel centres as a
:class:`Dataset`. The pieces (:func:`vector_basis`, :func:`shear_stiffness`,
:func:`dashpot`, :func:`solve_system`) also serve the clinical-like family
(:mod:`helmholtz_pinn.forward.clinical`: ``K[G'_f] + i K[G''_f]`` in place of
``K[G'] + i omega K[eta]``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.spatial import cKDTree
from skfem import Basis, BilinearForm, ElementTetP2, ElementVector, FacetBasis, MeshTet, asm
from skfem.helpers import ddot, div, dot, sym_grad

from helmholtz_pinn import laws
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward import fem_solve
from helmholtz_pinn.forward.fem_solve import nested_dissection
from helmholtz_pinn.forward.phantoms import add_noise
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.laws import voigt

__all__ = [
    "DEFAULT_FREQUENCIES", "LAYOUTS", "Inclusion", "Operators", "assemble", "box_mesh",
    "component_of_dofs", "dashpot", "labels", "law_operators", "middle_slice",
    "nested_dissection", "sample", "shared_noise", "shear_stiffness", "simulate_elastic",
    "solve", "solve_system", "system_matrix", "vector_basis", "with_moduli",
]  # fmt: skip

DEFAULT_FREQUENCIES: tuple[float, ...] = (60.0, 80.0, 100.0)
DEFAULT_DRIVE: tuple[float, float, float] = (1.0, 0.3, 0.1)
FACES = ("free", "absorbing")
Z_FACES = ("free", "absorbing", "sliding")
OUTPUTS = ("volume", "slice")
Field = Callable[[np.ndarray], np.ndarray]  # coordinates (3, ...) in m -> values (...)


# --------------------------------------------------------------------------- geometry


class Inclusion(NamedTuple):
    """Elliptic cylinder along z through the slab: centre as fractions of the field of
    view in (x, y), semi-axes in m, its tissue ``law``, rotation in rad (counter-clockwise
    from x). ``law`` is a law's parameters (:mod:`helmholtz_pinn.laws`, e.g.
    ``Springpot(6e3, 0.2)``) or a number: ``G'`` Pa of a Voigt solid whose viscosity is
    the simulator's ``viscosity``."""

    centre: tuple[float, float]
    semi_axes: tuple[float, float]
    law: float | tuple
    angle: float = 0.0


_FOUR_CENTRES = ((0.3125, 0.3), (0.3125, 0.7), (0.7, 0.3), (0.7, 0.7))  # as phantoms.four_target
LAYOUTS: dict[str, tuple[Inclusion, ...]] = {
    "four-target": tuple(
        Inclusion(c, (r, r), 10e3)
        for c, r in zip(_FOUR_CENTRES, (10e-3, 5e-3, 3e-3, 2e-3), strict=True)
    ),
    "two-ellipse": (
        Inclusion((0.35, 0.32), (14e-3, 8e-3), 6e3, math.radians(30)),
        Inclusion((0.62, 0.7), (7e-3, 12e-3), 1.5e3, math.radians(-20)),
    ),
}


def labels(inclusions: Sequence[Inclusion], extent: Sequence[float], x: np.ndarray) -> np.ndarray:
    """Region label at points ``x`` (3, ...) m: 1 background, ``2 + i`` inside inclusion
    ``i`` (the convention of :mod:`helmholtz_pinn.forward.phantoms`; later inclusions win)."""
    out = np.ones(x.shape[1:], np.int64)
    for label, inc in enumerate(inclusions, start=2):
        dx, dy = x[0] - inc.centre[0] * extent[0], x[1] - inc.centre[1] * extent[1]
        c, s = math.cos(inc.angle), math.sin(inc.angle)
        a, b = inc.semi_axes
        out[((c * dx + s * dy) / a) ** 2 + ((-s * dx + c * dy) / b) ** 2 <= 1.0] = label
    return out


def _check_fit(inclusions: Sequence[Inclusion], extent: Sequence[float], margin: float) -> None:
    """Every inclusion (its bounding circle plus ``margin`` m) inside the field of view."""
    for i, inc in enumerate(inclusions):
        cx, cy, r = inc.centre[0] * extent[0], inc.centre[1] * extent[1], max(inc.semi_axes)
        if min(cx, cy, extent[0] - cx, extent[1] - cy) < r + margin:
            raise InputError(
                f"inclusion {i} (semi-axes {inc.semi_axes} m at {inc.centre} of the field of "
                f"view) does not fit the {extent[0]:g} x {extent[1]:g} m box with a margin"
            )


def box_mesh(extent: Sequence[float], mesh_size: float) -> MeshTet:
    """Structured tetrahedral mesh of ``[0, Lx] x [0, Ly] x [0, Lz]`` (m): ``ceil(L / h)``
    cubes per axis, six tetrahedra each."""
    axes = [np.linspace(0.0, L, max(1, math.ceil(L / mesh_size - 1e-9)) + 1) for L in extent]
    return MeshTet.init_tensor(*axes)


# --------------------------------------------------------------------------- assembly


# weak forms: c is a real coefficient field at the quadrature points, w.n the facet normal
_shear = BilinearForm(lambda u, v, w: 2.0 * w.c * ddot(sym_grad(u), sym_grad(v)))
_bulk = BilinearForm(lambda u, v, w: w.c * div(u) * div(v))
_mass = BilinearForm(lambda u, v, w: w.c * dot(u, v))


@BilinearForm
def _dashpot(u, v, w):
    un, vn = dot(u, w.n), dot(v, w.n)
    return w.zp * un * vn + w.zs * (dot(u, v) - un * vn)


class Operators(NamedTuple):
    """Frequency-independent FE matrices (real CSR, SI units) and their basis."""

    basis: Basis
    k_storage: sparse.csr_matrix  # K[G']: int 2 G' eps(u):eps(v)
    k_viscosity: sparse.csr_matrix  # K[eta]
    k_lambda: sparse.csr_matrix  # int lambda div u div v
    mass: sparse.csr_matrix  # int rho u.v
    damping: sparse.csr_matrix  # dashpot on absorbing facets (zero matrix if none)


def vector_basis(mesh: MeshTet) -> Basis:
    """Vector quadratic (P2) basis on ``mesh`` with the order-4 quadrature of every form here."""
    return Basis(mesh, ElementVector(ElementTetP2()), intorder=4)


def shear_stiffness(basis: Basis, coefficient: np.ndarray) -> sparse.csr_matrix:
    """``K[c]``: the matrix of ``int 2 c eps(u):eps(v) dx`` for a real coefficient ``c`` at the
    quadrature points of ``basis`` (``G'`` in Pa gives ``K[G']``, ``eta`` in Pa s ``K[eta]``;
    linear in ``c``, so ``K[mu] = K[Re mu] + i K[Im mu]`` for a complex modulus)."""
    return asm(_shear, basis, c=coefficient).tocsr()


def dashpot(
    basis: Basis, facets: np.ndarray, storage: Field, lam: float, rho: float
) -> sparse.csr_matrix:
    """``C``: the Lysmer-Kuhlemeyer dashpot on ``facets``, ``traction = -i omega C u`` with
    impedances ``rho c_s = sqrt(rho G')`` (tangential) and ``rho c_p = sqrt(rho (lambda +
    2 G'))`` (normal); ``storage`` (``G'``, Pa) is evaluated at the facet quadrature points."""
    fb = FacetBasis(basis.mesh, basis.elem, facets=facets, intorder=4)
    gf = storage(np.asarray(fb.global_coordinates()))
    return asm(_dashpot, fb, zs=np.sqrt(rho * gf), zp=np.sqrt(rho * (lam + 2 * gf))).tocsr()


def assemble(
    mesh: MeshTet, storage: Field, viscosity: Field, lam: float, rho: float, absorbing=None
) -> Operators:
    """Assemble the real matrices of the Navier-Cauchy operator on P2 vector tetrahedra.

    ``storage`` (``G'``, Pa) and ``viscosity`` (``eta``, Pa s) are evaluated at the
    quadrature points. ``absorbing`` facet indices carry the Lysmer-Kuhlemeyer dashpot
    ``traction = -i omega rho (c_p u_n n + c_s u_t)`` with ``c_s = sqrt(G'/rho)`` and
    ``c_p = sqrt((lambda + 2 G')/rho)``: it matches outgoing plane waves at normal
    incidence (``C`` is assembled here, the factor ``i omega`` is applied per frequency).
    """
    basis = vector_basis(mesh)
    points = np.asarray(basis.global_coordinates()).shape[1:]
    k_lambda = asm(_bulk, basis, c=np.full(points, lam, float)).tocsr()
    mass = asm(_mass, basis, c=np.full(points, rho, float)).tocsr()
    ops = Operators(basis, None, None, k_lambda, mass, None)
    return with_moduli(ops, storage, viscosity, lam, rho, absorbing)


def with_moduli(
    ops: Operators, storage: Field, viscosity: Field, lam: float, rho: float, absorbing=None
) -> Operators:
    """``ops`` with ``K[G']``, ``K[eta]`` and the dashpot ``C`` of the fields ``storage``
    (``G'``, Pa) and ``viscosity`` (``eta``, Pa s) (:func:`assemble`; ``lam`` Pa and
    ``rho`` kg/m^3 as there)."""
    basis = ops.basis
    x = np.asarray(basis.global_coordinates())
    g = storage(x)
    if absorbing is not None and len(absorbing):
        damping = dashpot(basis, absorbing, storage, lam, rho)
    else:
        damping = sparse.csr_matrix((basis.N, basis.N))
    return ops._replace(
        k_storage=shear_stiffness(basis, g),
        k_viscosity=shear_stiffness(basis, np.broadcast_to(viscosity(x), g.shape)),
        damping=damping,
    )


def system_matrix(ops: Operators, omega: float) -> sparse.csr_matrix:
    """``A = K[G'] + i omega K[eta] + K[lambda] - omega^2 M + i omega C`` (complex symmetric)."""
    real = ops.k_storage + ops.k_lambda - omega**2 * ops.mass
    return (real + 1j * omega * (ops.k_viscosity + ops.damping)).tocsr()


def solve(
    ops: Operators, omega: float, dofs: np.ndarray, values: np.ndarray, precision: str = "double"
) -> np.ndarray:
    """FE coefficients ``u`` (complex, ``(N,)``) with ``u[dofs] = values`` and ``A u = 0``
    on the other rows (natural or dashpot conditions elsewhere): the free dofs in
    :func:`nested_dissection` order, solved by :func:`fem_solve.solve`
    (``precision`` "double" or "mixed")."""
    return solve_system(system_matrix(ops, omega), ops.basis.doflocs, dofs, values, precision)


def solve_system(
    a: sparse.csr_matrix,
    doflocs: np.ndarray,
    dofs: np.ndarray,
    values: np.ndarray,
    precision: str = "double",
) -> np.ndarray:
    """``u`` (complex, ``(N,)``) with ``u[dofs] = values`` and ``(A u)[free] = 0`` for any
    system matrix ``A`` on the dofs at ``doflocs`` (3, N) m: the free dofs in
    :func:`nested_dissection` order, solved by :func:`fem_solve.solve`."""
    order = nested_dissection(doflocs)
    free = order[~np.isin(order, dofs)]
    u = np.zeros(a.shape[0], complex)
    u[dofs] = values
    rows = a[free]
    u[free] = fem_solve.solve(rows[:, free].tocsc(), -(rows[:, dofs] @ u[dofs]), precision)
    return u


def sample(basis: Basis, u: np.ndarray, points: np.ndarray, candidates: int = 24) -> np.ndarray:
    """Values of the FE field ``u`` at ``points`` (3, P) m: complex ``(3, P)``.

    Each point is placed in the most-inside of the ``candidates`` tetrahedra with the
    nearest centroids (skfem's ``probes`` scales as points x elements in memory), then the
    reference P2 basis is evaluated there."""
    mesh, scalar = basis.mesh, basis.with_element(ElementTetP2())
    near = cKDTree(mesh.p[:, mesh.t].mean(axis=1).T).query(points.T, candidates)[1]
    x = np.repeat(points, candidates, axis=1)[:, :, None]
    ref = basis.mapping.invF(x, tind=near.ravel())[:, :, 0].reshape(3, *near.shape)
    inside = np.minimum(ref.min(axis=0), 1.0 - ref.sum(axis=0))  # min barycentric coordinate
    best = inside.argmax(axis=1)
    pick = np.arange(points.shape[1])
    if inside[pick, best].min() < -1e-9:
        raise InputError(
            f"sample: {int((inside[pick, best] < -1e-9).sum())} points outside the mesh"
        )
    cells, ref = near[pick, best], ref[:, pick, best]
    phi = np.stack([scalar.elem.lbasis(ref, k)[0] for k in range(scalar.Nbfun)])  # (10, P)
    dofs = scalar.element_dofs[:, cells]  # scalar dofs of each point's element
    return np.stack([(phi * u[idx[dofs]]).sum(axis=0) for idx in basis.split_indices()])


def component_of_dofs(basis: Basis) -> np.ndarray:
    """Displacement component (0, 1, 2) of every degree of freedom, ``(N,)`` int."""
    comp = np.empty(basis.N, np.int64)
    for c, idx in enumerate(basis.split_indices()):
        comp[idx] = c
    return comp


# --------------------------------------------------------------------------- phantoms


def _check_args(freqs, shape, spacing, drive, faces, z_faces, output, moduli) -> None:
    """Eager checks at the API boundary; each message quotes the bad value."""
    if freqs.size == 0 or not (np.isfinite(freqs).all() and (freqs > 0).all()):
        raise InputError(f"frequencies must be positive (Hz); got {freqs.tolist()!r}")
    if len(shape) != 3 or min(shape) < 3 or any(int(n) != n for n in shape):
        raise InputError(f"shape must be 3 integers >= 3 voxels (nx, ny, nz); got {shape!r}")
    if spacing.shape != (3,) or not (np.isfinite(spacing).all() and (spacing > 0).all()):
        raise InputError(f"spacing must be > 0 m, a scalar or 3 values; got {spacing.tolist()!r}")
    if drive.shape != (3,) or not np.isfinite(drive).all():
        raise InputError(f"drive must be 3 finite amplitudes (x, y, z); got {drive.tolist()!r}")
    choices = (("faces", faces, FACES), ("z_faces", z_faces, Z_FACES), ("output", output, OUTPUTS))
    for name, value, valid in choices:
        if value not in valid:
            raise InputError(f"{name} must be one of {valid}; got {value!r}")

    def ok(name: str, v) -> bool:
        if name == "mesh_size" and v is None:
            return True  # from the wavelength
        return v is not None and np.isfinite(v) and (v > 0 or (v == 0 and name == "viscosity"))

    bad = {k: v for k, v in moduli.items() if not ok(k, v)}
    if bad:
        raise InputError(f"lam, rho, mesh_size must be > 0, viscosity >= 0; got {bad}")


def _tissues(background, inclusions: Sequence[Inclusion], viscosity: float) -> tuple:
    """The law parameters of region ``r`` at index ``r - 1`` (the background, then the
    inclusions); a number is ``G'`` Pa of a Voigt solid of ``viscosity`` Pa s."""
    named = [("background", background)]
    named += [(f"inclusion {i} law", inc.law) for i, inc in enumerate(inclusions)]
    tissues = []
    for name, t in named:
        law = voigt.Voigt(float(t), float(viscosity)) if isinstance(t, numbers.Real) else t
        laws.check(law, name)
        tissues.append(law)
    return tuple(tissues)


def _region_moduli(tissues: tuple, frequency: float) -> np.ndarray:
    """``mu`` (Pa) of each region's law at ``frequency`` Hz, complex ``(regions,)``."""
    return np.array([laws.modulus(t, frequency) for t in tissues], complex)


def _region_field(values: np.ndarray, layout, extent) -> Field:
    """The field of ``values[r - 1]`` in region ``r`` (:func:`labels`)."""
    return lambda x: values[labels(layout, extent, x) - 1]


def _boundary(basis: Basis, extent, drive, z_faces: str):
    """Dirichlet dofs and values: ``u = drive`` on ``y = 0``; ``u_z = 0`` on the z faces if
    sliding (the drive wins on shared edges)."""
    at, comp = basis.doflocs, component_of_dofs(basis)
    driven = np.flatnonzero(np.isclose(at[1], 0.0, atol=1e-9 * extent[1]))
    if z_faces != "sliding":
        return driven, drive[comp[driven]]
    on_z = np.isclose(at[2], 0.0, atol=1e-9 * extent[2]) | np.isclose(at[2], extent[2])
    slide = np.setdiff1d(np.flatnonzero(on_z & (comp == 2)), driven)
    return np.concatenate([driven, slide]), np.concatenate([drive[comp[driven]], 0 * slide])


def _absorbing_facets(mesh: MeshTet, extent, faces: str, z_faces: str) -> np.ndarray:
    """Boundary facets with the dashpot: x = 0, Lx and y = Ly if ``faces`` is
    "absorbing"; z = 0, Lz if ``z_faces`` is."""

    def on(axis, value):
        return lambda x: np.isclose(x[axis], value, atol=1e-9 * extent[axis])

    sides = [on(0, 0.0), on(0, extent[0]), on(1, extent[1])] if faces == "absorbing" else []
    sides += [on(2, 0.0), on(2, extent[2])] if z_faces == "absorbing" else []
    found = [mesh.facets_satisfying(f, boundaries_only=True) for f in sides]
    return np.concatenate([np.zeros(0, np.int64), *found]).astype(np.int64)


def law_operators(
    mesh: MeshTet, layout, extent, tissues: tuple, frequencies, lam: float, rho: float, absorbing
):
    """``(frequency, Operators)`` for each of ``frequencies`` (Hz): region ``r`` of
    ``layout`` (:func:`labels`) follows the law ``tissues[r - 1]``, as ``G' = Re mu`` and
    ``eta = Im mu / omega`` (module doc). ``K[G']``, ``K[eta]`` and ``C`` are assembled
    again only where they differ from the previous frequency's."""
    ops, moduli = None, None
    for f in frequencies:
        mu = _region_moduli(tissues, f)
        now = (mu.real, mu.imag / (2 * np.pi * f))
        if moduli is None or not all(map(np.array_equal, now, moduli)):
            moduli = now
            fields = [_region_field(values, layout, extent) for values in now]
            if ops is None:
                ops = assemble(mesh, *fields, lam, rho, absorbing)
            else:
                ops = with_moduli(ops, *fields, lam, rho, absorbing)
        yield f, ops


def simulate_elastic(
    layout: str | Sequence[Inclusion] = "four-target",
    *,
    frequencies: Sequence[float] = DEFAULT_FREQUENCIES,
    shape: tuple[int, int, int] = (80, 100, 10),
    spacing: float | Sequence[float] = 1e-3,
    lam: float = 1e6,
    rho: float = 1000.0,
    background: float | tuple = 3e3,
    viscosity: float = 1.0,
    drive: Sequence[float] = DEFAULT_DRIVE,
    faces: str = "free",
    z_faces: str = "free",
    mesh_size: float | None = None,
    elements_per_wavelength: float = 8.0,
    precision: str = "double",
    noise_db: float | None = None,
    seed: int = 0,
    output: str = "volume",
    log: Callable[[str], None] | None = None,
) -> Dataset:
    """Simulate a 3-D elastic MRE acquisition of a slab phantom (equation: module doc).

    The box is ``shape * spacing`` m: the ``background`` tissue outside the inclusions,
    each inclusion's own inside. The ``y = 0`` face moves rigidly with ``u = drive``.

    Args:
      layout: a name of :data:`LAYOUTS`, or a sequence of :class:`Inclusion`.
      frequencies: drive frequencies, Hz.
      shape: voxels ``(nx, ny, nz)`` (default 80 x 100 x 10 mm at 1 mm).
      spacing: voxel size, m (one value: cubic voxels).
      lam: first Lame parameter, Pa (nearly incompressible tissue).
      rho: density, kg/m^3.
      background: the tissue outside the inclusions: a law's parameters
        (:mod:`helmholtz_pinn.laws`), or a number: its storage modulus ``G'`` Pa of a
        Voigt solid of ``viscosity``.
      viscosity: Voigt viscosity ``eta``, Pa s, of the regions whose tissue is a number
        (the background by default and every inclusion of :data:`LAYOUTS`).
      drive: x, y, z amplitudes of the ``y = 0`` face (the length unit of ``u``).
      faces: the faces ``x = 0, Lx`` and ``y = Ly``: "free" (traction-free) or
        "absorbing" (dashpot, see :func:`assemble`).
      z_faces: the z faces: "free", "absorbing" or "sliding" (``u_z = 0``, tangential
        traction free: a plane-strain-like bulk).
      mesh_size: element size, m; None: the background's shear wavelength
        ``sqrt(G' / rho) / f_max`` (``G' = Re mu`` at ``f_max``) over
        ``elements_per_wavelength`` (softer inclusions get fewer elements per wavelength).
      elements_per_wavelength: see ``mesh_size``.
      precision: "double", or "mixed" (complex64 factors refined to a 1e-10 residual,
        factors of half the size: :mod:`helmholtz_pinn.forward.fem_solve`).
      noise_db: noise-to-signal power ratio in dB (:func:`phantoms.add_noise`) relative
        to the mean power of all three components per frequency, so all components
        carry the same absolute noise as in a scanner; None: clean.
      seed: the noise's random seed.
      output: "volume", or "slice": the middle z-slice (index ``nz // 2``), sampled
        from the same 3-D solution.
      log: called with a line before each frequency's solve (progress); None: silent.

    Returns:
      :class:`Dataset` with ``u`` complex64 ``(F, 3, nx, ny, nz)`` or ``(F, 3, nx, ny)``,
      the true ``mu`` complex128 ``(F, *grid)`` Pa of each region's law, ``regions``
      (1 background, 2.. inclusions) and an all-true ``mask`` on the same grid.
    """
    freqs = np.asarray(frequencies, float).reshape(-1)
    h = np.asarray(spacing, float).reshape(-1)
    h = np.repeat(h, 3) if h.size == 1 else h
    drive = np.asarray(drive, float)
    moduli = dict(lam=lam, rho=rho, mesh_size=mesh_size, viscosity=viscosity)
    _check_args(freqs, shape, h, drive, faces, z_faces, output, moduli)
    fem_solve.check_precision(precision)
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise InputError(f"unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
        layout = LAYOUTS[layout]
    tissues = _tissues(background, layout, viscosity)
    if mesh_size is None:
        storage = _region_moduli(tissues[:1], freqs.max())[0].real
        mesh_size = math.sqrt(storage / rho) / freqs.max() / elements_per_wavelength
    n = np.asarray(shape, int)
    extent = tuple(float(e) for e in n * h)
    _check_fit(layout, extent, 2 * float(h[:2].max()))

    mesh = box_mesh(extent, mesh_size)
    absorbing = _absorbing_facets(mesh, extent, faces, z_faces)
    grid, centres = _voxel_centres(n, h, output)
    u = np.empty((freqs.size, 3, *grid), np.complex64)
    operators = law_operators(mesh, layout, extent, tissues, freqs, lam, rho, absorbing)
    for i, (f, ops) in enumerate(operators):
        if i == 0:
            dirichlet, values = _boundary(ops.basis, extent, drive, z_faces)
        if log is not None:
            log(f"{f:g} Hz ({i + 1} of {freqs.size}): solving for {ops.basis.N} unknowns")
        field = solve(ops, 2 * np.pi * f, dirichlet, values, precision)
        u[i] = sample(ops.basis, field, centres).reshape(3, *grid)
    region = labels(layout, extent, centres).reshape(grid)
    clean = Dataset(
        u=u,
        frequency=freqs,
        spacing=np.array(h[: len(grid)]),
        mask=np.ones(grid, bool),
        mu=np.stack([_region_moduli(tissues, f)[region - 1] for f in freqs]),
        regions=region,
        rho=float(rho),
    )
    return clean if noise_db is None else shared_noise(clean, noise_db, seed)


def _voxel_centres(n: np.ndarray, h: np.ndarray, output: str) -> tuple[tuple[int, ...], np.ndarray]:
    """(grid, centres (3, voxels) in m) of the data voxels: the whole box, or its middle
    z-slice (index nz // 2) for ``output`` "slice"."""
    axes = [(np.arange(k) + 0.5) * hk for k, hk in zip(n, h, strict=True)]
    if output == "slice":
        axes[2] = axes[2][[n[2] // 2]]
    grid = tuple(int(k) for k in (n if output == "volume" else n[:2]))
    return grid, np.stack(np.meshgrid(*axes, indexing="ij")).reshape(3, -1)


def shared_noise(data: Dataset, noise_db: float, seed: int = 0) -> Dataset:
    """``data`` with :func:`phantoms.add_noise` at ``noise_db`` dB inside its mask,
    relative to the mean power of all components there per frequency: one absolute noise
    level for every component (as in a scanner), so a weak component has a lower SNR."""
    u, inside = data.u.copy(), data.mask
    noisy = add_noise(u[:, :, inside].reshape(data.n_freq, 1, -1), noise_db, seed)
    u[:, :, inside] = noisy.reshape(data.n_freq, data.n_comp, -1)
    return dataclasses.replace(data, u=u)


def middle_slice(data: Dataset) -> Dataset:
    """The z-slice ``nz // 2`` of a volume (what ``output="slice"`` samples)."""
    if data.ndim != 3:
        raise InputError(f"middle_slice needs a volume (F, C, nx, ny, nz); got {data.u.shape}")
    k = data.grid[2] // 2
    fields = dict(u=data.u, mask=data.mask, mu=data.mu, regions=data.regions)
    sliced = {name: None if a is None else a[..., k] for name, a in fields.items()}
    return dataclasses.replace(data, spacing=data.spacing[:2], **sliced)
