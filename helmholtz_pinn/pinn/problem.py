"""A dataset as a training problem: nondimensional coordinates, fields and weights.

x' = x / L (L the field of view, m), u' = u / s (s the RMS of each frequency's and
component's field in the mask), mu' = mu / mu_ref (Pa), kappa_f = rho omega_f^2 L^2 /
mu_ref; the noise-aware weight of each field (:func:`field_weights`) and the Fourier
scales (cycles per field of view) from the shortest expected wavelength.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np

from helmholtz_pinn.assess import stencils
from helmholtz_pinn.assess.metrics import interior_mask
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import forms, scaling, train


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


def reference_modulus(dataset: Dataset, cfg: Config, estimate: float | None = None) -> float:
    """mu_ref in Pa: the configured value, else ``estimate`` (the data's AHI estimate,
    Pa, when the caller has it), else a robust estimate from the data."""
    if cfg.mu_ref is not None:
        return float(cfg.mu_ref)
    if estimate is not None:
        return float(estimate)
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


# The u-network's Fourier factor (Config.sigma_factor_u None): 0.5 for one 3-D fit and for
# 2-D data whose best field's noise fraction is at least NOISY_2D, else 1.0. Why:
# docs/defaults.md.
SIGMA_FACTOR_U_3D = 0.5
SIGMA_FACTOR_U_2D = 1.0
NOISY_2D = 0.15


def sigma_factor_u(cfg: Config, ndim: int, noise: float = 0.0) -> float:
    """The configured ``sigma_factor_u``, else :data:`SIGMA_FACTOR_U_3D` for 3-D data and
    for 2-D data whose best field's noise fraction ``noise`` is at least :data:`NOISY_2D`
    (a smoother u-network that does not fit the noise), else :data:`SIGMA_FACTOR_U_2D`."""
    if cfg.sigma_factor_u is not None:
        return cfg.sigma_factor_u
    return SIGMA_FACTOR_U_3D if ndim == 3 or noise >= NOISY_2D else SIGMA_FACTOR_U_2D


def best_noise(dataset: Dataset) -> float:
    """The smallest noise fraction (:func:`stencils.field_noise` / :func:`stencils.field_rms`)
    over the dataset's non-zero fields: how noisy its best-measured field is."""
    rms = stencils.field_rms(dataset)
    ratio = stencils.field_noise(dataset)[rms > 0] / rms[rms > 0]
    return float(ratio.min()) if ratio.size else 0.0


# The L-BFGS phase (Config.lbfgs_steps None): LBFGS_STEPS iterations after Adam for one
# fit of a form with Form.lbfgs_default (navier, the form and the kind of run it was
# measured on: one dataset, no ensemble)
# longer than Config.lbfgs_from whose best field has a noise fraction below CLEAN_NOISE;
# at -20 dB (noise fraction 0.06-0.08) it fitted the noise; and whose mask has at most
# Config.lbfgs_points voxels, so the phase's sample is the whole field (on a larger
# volume it cost as much as the Adam phase for 0.1 point of G'). The fits of
# mu_model="auto" are judged after AUTO_LBFGS_STEPS (with the longer phase both laws'
# spreads shrank and the choice flipped to the wrong law on weakly damped Voigt tissue);
# the kept fit's phase then goes on to LBFGS_STEPS. Why: docs/defaults.md.
LBFGS_STEPS = 4000
AUTO_LBFGS_STEPS = 1000
CLEAN_NOISE = 0.02


def lbfgs_plan(datasets: Sequence[Dataset], cfg: Config, iterations: int = LBFGS_STEPS) -> Config:
    """``cfg`` with ``lbfgs_steps`` an int (None resolved by the run, the form, the step
    count, the mask's size and the data's noise, see :data:`CLEAN_NOISE`, to ``iterations``
    or 0; ``datasets`` are the run's members: a batch or the z-slices of a slicewise fit
    are several) and, when there is an L-BFGS phase, ``steps`` the Adam phase's
    min(steps, lbfgs_from)."""
    n = cfg.lbfgs_steps
    if n is None:
        one = len(datasets) == 1 and cfg.ensemble == 1
        form = one and forms.get(forms.resolve(cfg.pde, datasets[0].n_comp)).lbfgs_default
        long = form and cfg.steps > cfg.lbfgs_from
        whole = long and int(np.count_nonzero(datasets[0].mask)) <= cfg.lbfgs_points
        clean = whole and best_noise(datasets[0]) < CLEAN_NOISE
        n = iterations if clean else 0
    steps = min(cfg.steps, cfg.lbfgs_from) if n else cfg.steps
    return cfg.replace(lbfgs_steps=n, steps=steps)


# TF32 matmuls (Config.tf32_steps None): every Adam step when an L-BFGS phase follows
# (the phase, in float32, ends the fit; the map was unchanged within the run-to-run
# spread); none in a fit of Adam alone (half its steps in TF32 blurred the smallest target
# of a noisy organ). Why: docs/defaults.md.
def tf32_plan(cfg: Config, gpu: bool) -> Config:
    """``cfg`` (after :func:`lbfgs_plan`: ``steps`` are the Adam phase's) with
    ``tf32_steps`` an int: None resolved to ``steps`` when an L-BFGS phase follows, else
    0; 0 off a GPU (``gpu`` False: a CPU's matmuls are float32 at any precision) and
    where ``jax_default_matmul_precision`` is set (the user's precision then applies to
    every program)."""
    n = cfg.tf32_steps
    if not gpu or jax.config.jax_default_matmul_precision is not None:
        n = 0
    elif n is None:
        n = cfg.steps if cfg.lbfgs_steps else 0
    return cfg.replace(tf32_steps=n)


def shared_settings(
    datasets: Sequence[Dataset], cfg: Config, estimates: Sequence[float | None] | None = None
) -> Config:
    """``cfg`` with mu_ref (Pa), sigma_factor_u and sigma_u/sigma_mu filled in, one value for
    all datasets (members of one program share them): mu_ref the configured one, else the
    median of the per-dataset estimates; sigma the configured one, else ``sigma_factor``
    times the largest L / lambda_min (so every dataset's shortest wave is representable);
    the u factor from :func:`sigma_factor_u` with the noisiest dataset's :func:`best_noise`.
    ``estimates``: the datasets' AHI estimates (Pa) where already computed."""
    estimates = [None] * len(datasets) if estimates is None else estimates
    mu_ref = float(
        np.median([reference_modulus(d, cfg, e) for d, e in zip(datasets, estimates, strict=True)])
    )
    cycles = max(wave_cycles(d, mu_ref) for d in datasets)
    ndim, auto = datasets[0].ndim, cfg.sigma_factor_u is None and cfg.sigma_u is None
    noise = max(best_noise(d) for d in datasets) if auto and ndim == 2 else 0.0
    factor = sigma_factor_u(cfg, ndim, noise)
    return cfg.replace(
        mu_ref=mu_ref,
        sigma_factor_u=factor,
        sigma_u=cfg.sigma_u or factor * cycles,
        sigma_mu=cfg.sigma_mu or cfg.sigma_factor_mu * cycles,
    )


def prepare(dataset: Dataset, cfg: Config) -> Prepared:
    """Scale ``dataset`` and derive the Fourier scales (cycles per field of view):
    sigma = factor * L / lambda_min with lambda_min = sqrt(mu_ref / rho) / f_max."""
    cfg = shared_settings([dataset], cfg)
    spec = train.Spec.of(cfg, dataset.ndim, dataset.n_freq, dataset.n_comp)
    spec.form.check(dataset.n_comp, dataset.ndim)
    if spec.form.transform is not None:
        dataset = spec.form.transform(dataset)
    length = field_of_view(dataset)
    scales = scaling.make_scales(dataset.frequency, length, cfg.mu_ref, dataset.rho)
    mask = dataset.mask.ravel()
    u = dataset.u.reshape(dataset.n_freq, dataset.n_comp, -1)[..., mask]
    u_scale = stencils.field_rms(dataset)
    noise, weight = field_weights(dataset, u_scale, cfg)
    unit = np.where(u_scale > 0, u_scale, 1.0)  # an all-zero field stays zero, weight 0
    x_grid = grid_coordinates(dataset, length)
    margin = pde_margin(dataset, cfg, spec.pde)
    problem = train.Problem(
        x=x_grid[mask],
        u=np.moveaxis(u / unit[..., None], -1, 0).astype(np.complex64),
        kappa=np.asarray(scales.kappa, np.float32),
        omega_ratio=np.asarray(scales.omega_ratio, np.float32),
        count=np.asarray(int(mask.sum()), np.int32),
        weight=weight.astype(np.float32),
        scale=(u_scale / u_scale.max(axis=1, keepdims=True)).astype(np.float32),
        pde=pde_rows(dataset.mask, margin),
    )
    fraction = round(float(np.mean(problem.pde)), 4) if problem.pde.size else 0.0
    return Prepared(
        problem,
        spec,
        scales,
        cfg.sigma_u,
        cfg.sigma_mu,
        x_grid,
        unit,
        noise,
        margin,
        fraction,
        cfg.sigma_factor_u,
    )


def pde_margin(dataset: Dataset, cfg: Config, pde: str) -> int:
    """Voxels along the field of view's in-plane edges without a PDE residual
    (:func:`pde_rows`): the configured ``pde_margin``,
    else the fraction ``Form.pde_margin`` (of the resolved form and the data's dimension)
    of :func:`shortest_wavelength` (``cfg.mu_ref`` filled in by :func:`shared_settings`)
    in in-plane voxels (their mean size, m), rounded, at least 1.
    The layer it leaves out scales with the wavelength, not with the voxel."""
    if cfg.pde_margin is not None:
        return cfg.pde_margin
    fraction = forms.get(pde).pde_margin.get(dataset.ndim, 0.0)
    if not fraction:
        return 0
    voxel = float(np.mean(dataset.spacing[:2]))
    return max(1, round(fraction * shortest_wavelength(dataset, cfg.mu_ref) / voxel))


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


def field_weights(dataset: Dataset, rms: np.ndarray, cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """(noise fraction, loss weight), both (F, C), of each field of ``dataset``.

    The noise fraction n_fc = sigma_fc / rms_fc: the estimated noise RMS
    (:func:`stencils.field_noise`) over the field's RMS in the mask. With ``weighting="noise"`` the
    weight is 1 / n_eff^2, n_eff = max(sigma_fc, noise_floor * max_c rms_fc) / rms_fc,
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
        if cfg.weighting == "uniform":
            return noise, np.where(rms > 0, 1.0, 0.0)
        floor = cfg.noise_floor * rms.max(axis=1, keepdims=True)
        weight = (rms / np.maximum(sigma, floor)) ** 2
    return noise, weight / weight.max()
