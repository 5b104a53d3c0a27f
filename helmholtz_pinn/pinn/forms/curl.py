"""Curl form, for three-component data: the heterogeneous Helmholtz form on q = curl u.

The divergence-free part of a Navier-Cauchy field obeys the shear-wave equation: the
curl removes the compressional wave (curl grad = 0), so where mu is locally constant
    mu Lap q + rho omega^2 q = 0,
    q = curl u = (d_y u_z - d_z u_y, d_z u_x - d_x u_z, d_x u_y - d_y u_x);
the residual is that of :mod:`helmholtz_pinn.pinn.forms.hetero` on q, which keeps the flux
term grad mu . grad q at target edges. q is computed from the *data* by central
differences before fitting (:func:`helmholtz_pinn.assess.stencils.curl`; the mask loses its
outer voxel layer), so the networks' derivatives stay second order; differencing the
network instead would need third derivatives in every step. A 2-D slice of 3-D motion
assumes d_z = 0 (waves travel in the slice plane); volumes use all three derivatives.
"""

import dataclasses

import numpy as np

from helmholtz_pinn.assess import stencils
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn.forms import Form
from helmholtz_pinn.pinn.forms.hetero import residual


def curl_dataset(dataset: Dataset) -> Dataset:
    """``dataset`` with u replaced by q = curl u (units of u per m) and the mask by the
    voxels where q has its central stencil."""
    u, valid = stencils.usable(dataset.u.astype(np.complex128), dataset.mask, dataset.grid)
    q = stencils.curl(u, valid, np.asarray(dataset.spacing))
    mask = valid & np.all(np.isfinite(q), axis=(0, 1))
    if not mask.any():
        raise InputError(
            f"pde='curl': no mask voxel has the neighbours a central difference needs "
            f"(grid {dataset.grid}, {int(valid.sum())} mask voxels)"
        )
    q = np.where(mask, q, 0).astype(dataset.u.dtype)
    return dataclasses.replace(dataset, u=q, mask=mask)


FORM = Form(
    name="curl",
    equation="div(mu grad q) + rho omega^2 q = 0, q = curl u",
    needs=frozenset({"grad_u", "lap_u", "grad_mu"}),
    residual=residual,
    components=(3,),
    transform=curl_dataset,
)
