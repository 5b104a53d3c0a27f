"""A dataset as a training problem: nondimensional coordinates, fields and weights.

x' = x / L (L the field of view, m), u' = u / s (s the RMS of each frequency's and
component's field in the mask), mu' = mu / mu_ref (Pa), kappa_f = rho omega_f^2 L^2 /
mu_ref; the noise-aware weight of each field (:func:`field_weights`) and the Fourier
scales (cycles per field of view) from the shortest expected wavelength.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from helmholtz_pinn.assess import stencils
from helmholtz_pinn.assess.metrics import interior_mask
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import scaling, train


@dataclasses.dataclass
class Prepared:
    """A dataset in nondimensional form, plus what is needed to map back to Pa."""

    problem: train.Problem  # host (NumPy) arrays
    spec: train.Spec
    scales: scaling.Scales
    sigma_u: float  # Fourier scales, cycles per field of view
    sigma_mu: float
    x_grid: np.ndarray  # (prod(grid), d) nondimensional coordinates of every voxel
    u_scale: np.ndarray  # (F, C) RMS of u, the data's unit (1 for an all-zero field)
    noise: np.ndarray  # (F, C) estimated noise RMS / field RMS
    pde_margin: int  # voxels along the field of view's in-plane edges without a PDE residual
    pde_fraction: float  # fraction of the mask's voxels whose PDE residual is in the loss
    sigma_factor_u: float  # the u-network's factor of the automatic Fourier scale


def field_of_view(dataset: Dataset) -> float:
    """L = the largest extent (n - 1) h of the grid, m."""
    return float(max((n - 1) * h for n, h in zip(dataset.grid, dataset.spacing, strict=True)))


def grid_coordinates(dataset: Dataset, length: float) -> np.ndarray:
    """Voxel-centre coordinates x / L, shape (prod(grid), d), C order of the grid."""
    axes = [np.arange(n) * h / length for n, h in zip(dataset.grid, dataset.spacing, strict=True)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1).astype(np.float32)


def estimate_reference(dataset: Dataset) -> float:
    """A robust estimate of the data's modulus, Pa (smoothed algebraic inversion): the
    reference modulus when none is given or estimated already."""
    from helmholtz_pinn.assess.baselines import estimate_modulus

    try:
        return float(estimate_modulus(dataset))
    except ValueError as err:  # e.g. a constant field: no wave to estimate from
        message = f"cannot estimate mu_ref from the data ({err}); give mu_ref= (Pa)"
        raise InputError(message) from err


def shortest_wavelength(dataset: Dataset, mu_ref: float) -> float:
    """lambda_min = sqrt(mu_ref / rho) / f_max, m (mu_ref in Pa, f in Hz): the shortest
    shear wavelength expected in the data."""
    return float(np.sqrt(mu_ref / dataset.rho) / np.max(dataset.frequency))


def wave_cycles(dataset: Dataset, mu_ref: float) -> float:
    """Shortest expected wavelengths per field of view: L / lambda_min
    (:func:`shortest_wavelength`)."""
    return field_of_view(dataset) / shortest_wavelength(dataset, mu_ref)


def best_noise(dataset: Dataset) -> float:
    """The smallest noise fraction (:func:`stencils.field_noise` / :func:`stencils.field_rms`)
    over the dataset's non-zero fields: how noisy its best-measured field is."""
    rms = stencils.field_rms(dataset)
    ratio = stencils.field_noise(dataset)[rms > 0] / rms[rms > 0]
    return float(ratio.min()) if ratio.size else 0.0


def prepare(
    dataset: Dataset,
    *,
    spec: train.Spec,
    mu_ref: float,
    sigma_u: float,
    sigma_mu: float,
    sigma_factor_u: float,
    pde_margin: int,
    weighting: str,
    noise_floor: float,
) -> Prepared:
    """Scale ``dataset`` for the program ``spec`` with the resolved settings of its plan
    (:func:`helmholtz_pinn.fit.plan.plan`): ``mu_ref`` (Pa), the Fourier scales (cycles
    per field of view), ``pde_margin`` (voxels, :func:`pde_rows`) and the weighting
    (:func:`field_weights`)."""
    spec.form.check(dataset.n_comp, dataset.ndim)
    if spec.form.transform is not None:
        dataset = spec.form.transform(dataset)
    length = field_of_view(dataset)
    scales = scaling.make_scales(dataset.frequency, length, mu_ref, dataset.rho)
    mask = dataset.mask.ravel()
    u = dataset.u.reshape(dataset.n_freq, dataset.n_comp, -1)[..., mask]
    u_scale = stencils.field_rms(dataset)
    noise, weight = field_weights(dataset, u_scale, weighting, noise_floor)
    unit = np.where(u_scale > 0, u_scale, 1.0)  # an all-zero field stays zero, weight 0
    x_grid = grid_coordinates(dataset, length)
    problem = train.Problem(
        x=x_grid[mask],
        u=np.moveaxis(u / unit[..., None], -1, 0).astype(np.complex64),
        kappa=np.asarray(scales.kappa, np.float32),
        omega_ratio=np.asarray(scales.omega_ratio, np.float32),
        count=np.asarray(int(mask.sum()), np.int32),
        weight=weight.astype(np.float32),
        scale=(u_scale / u_scale.max(axis=1, keepdims=True)).astype(np.float32),
        pde=pde_rows(dataset.mask, pde_margin),
    )
    fraction = round(float(np.mean(problem.pde)), 4) if problem.pde.size else 0.0
    return Prepared(
        problem,
        spec,
        scales,
        sigma_u,
        sigma_mu,
        x_grid,
        unit,
        noise,
        pde_margin,
        fraction,
        sigma_factor_u,
    )


def pde_rows(mask: np.ndarray, margin: int) -> np.ndarray:
    """(M,) float32 over the mask's voxels (C order): 1 where the PDE residual is fitted,
    0 within ``margin`` voxels of the field of view's edges along grid axes 0 and 1.

    The margin is for a specimen's traction-free faces, where the field of view ends (a
    slab's sides). The rim of a mask inside the field of view (an organ outlined in
    surrounding tissue, NaN outside) is tissue, not a free face: its residual is kept
    (docs/defaults.md, ``pde_margin``)."""
    mask = np.asarray(mask, bool)
    try:
        inner = interior_mask(np.ones_like(mask), margin, (0, 1)) & mask
        if not inner.any():
            raise InputError(f"a margin of {margin} voxels leaves no voxel of the mask")
    except InputError as err:
        raise InputError(f"pde_margin={margin}: {err}; set a smaller pde_margin") from err
    return inner[mask].astype(np.float32)


def field_weights(
    dataset: Dataset, rms: np.ndarray, weighting: str = "noise", noise_floor: float = 0.03
) -> tuple[np.ndarray, np.ndarray]:
    """(noise fraction, loss weight), both (F, C), of each field of ``dataset``.

    The noise fraction n_fc = sigma_fc / rms_fc: the estimated noise RMS
    (:func:`stencils.field_noise`) over the field's RMS in the mask. With ``weighting="noise"``
    the weight is 1 / n_eff^2, n_eff = max(sigma_fc, noise_floor * max_c rms_fc) / rms_fc,
    divided by its largest value: the inverse noise variance of the field in its own unit
    (maximum likelihood), so equally noisy but weaker components count less, and a field
    that is mostly noise or numerically zero counts almost nothing. ``"uniform"``: all 1.
    Raises an InputError when every component of a frequency is zero.
    """
    dead = np.all(rms == 0, axis=1)
    if dead.any():
        raise InputError(
            f"u is zero in the mask for every component at {dataset.frequency[dead].tolist()} "
            "Hz; remove those frequencies"
        )
    sigma = stencils.field_noise(dataset)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = np.where(rms > 0, sigma / rms, np.inf)
        if weighting == "uniform":
            return noise, np.where(rms > 0, 1.0, 0.0)
        floor = noise_floor * rms.max(axis=1, keepdims=True)
        weight = (rms / np.maximum(sigma, floor)) ** 2
    return noise, weight / weight.max()
