"""A case's finite-element system: the mesh size, the frequency-independent matrices
assembled once, the system matrix of each frequency and the drivers' Dirichlet values
(:mod:`helmholtz_pinn.forward.clinical`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse
from skfem import Basis, BilinearForm, MeshTet, asm
from skfem.helpers import div, dot

from helmholtz_pinn import laws
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward import elastic
from helmholtz_pinn.forward.clinical.case import ClinicalCase, extent
from helmholtz_pinn.forward.clinical.geometry import (
    background_scale,
    modulus,
    region_labels,
    region_laws,
)

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
        np.sqrt(np.abs(laws.modulus(law, f)) * (lowest if r == 0 else 1.0) / case.rho) / f
        for r, law in enumerate(region_laws(case))
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
    for law, k in zip(region_laws(case), ops.shear, strict=True):
        a = a + laws.modulus(law, frequency) * k
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
