"""Simulate a 3-D MRE acquisition of a clinical-like case
(:mod:`helmholtz_pinn.forward.clinical`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward import elastic, fem_solve
from helmholtz_pinn.forward.clinical.assembly import assemble, driver_dofs, mesh_size, system_matrix
from helmholtz_pinn.forward.clinical.case import ClinicalCase, check_case, extent
from helmholtz_pinn.forward.clinical.family import FAMILY
from helmholtz_pinn.forward.clinical.geometry import modulus, organ_mask, region_labels
from helmholtz_pinn.io.dataset import Dataset


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
    u[:, :, ~mask] = np.nan
    data = Dataset(
        u=u,
        frequency=freqs,
        spacing=np.full(3, float(case.spacing)),
        mask=mask,
        mu=np.stack([modulus(case, centres, f).reshape(grid) for f in freqs]),
        regions=region_labels(case, centres).reshape(grid),
        rho=float(case.rho),
    )
    if noise_db is None:
        return data
    return elastic.shared_noise(data, noise_db, case.seed if seed is None else seed)
