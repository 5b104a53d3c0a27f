"""Defaults that follow the data: pure rules from the data's facts to a setting.

Each rule takes :class:`DataFacts` (what the data show: the shortest shear wavelength
in voxels estimated from u, the grid, the noise, the components and frequencies) and
returns a :class:`Default`: the value, the rule in words and whether the rule is backed
by a measurement (``backed``) or is a proposal awaiting the data-space sweep
(``scripts/sweep.py``). In the region the defaults were tuned on (14-17 voxels per
shortest wavelength, grids of 80-100 voxels, three components, at most moderate noise)
every rule returns today's value. A user's explicit setting is not these rules' concern:
the run plan applies a rule only to a setting left None. Why each rule is what it is:
docs/defaults.md, "Defaults that follow the data".
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from helmholtz_pinn.assess import wavelength
from helmholtz_pinn.config import Config, cpu_settings
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.pinn import forms, problem
from helmholtz_pinn.pinn.forms import weak

__all__ = [
    "BATCH_SIZE",
    "CLEAN_NOISE",
    "COARSE",
    "COARSE_2D",
    "COARSE_3C",
    "LEARNING_RATE",
    "MU_DEPTH",
    "MU_WIDTH",
    "NOISIER_FACTOR_U",
    "NOISY_2D",
    "NOISY_3C",
    "NOISY_PDE_WEIGHT",
    "NOISY_FACTOR_U",
    "N_FEATURES",
    "PDE_WEIGHT",
    "SIGMA_FACTOR_U_2D",
    "SIGMA_FACTOR_U_3D",
    "SIGMA_RATIO_Z",
    "SMALL_WIDTH",
    "SMALL_2D",
    "STEPS",
    "TUNED_VOXELS",
    "WIDTH",
    "DataFacts",
    "Default",
    "base_factor_u",
    "batch_size",
    "facts_of",
    "fit_size",
    "fourier_scales",
    "learning_rate",
    "lbfgs_runs",
    "noisy_below_tuned",
    "noisy_coarse_fit",
    "network_size",
    "overrides",
    "pde_margin",
    "pde_weight",
    "settings",
    "sigma_factor_u",
    "sigma_ratio_z",
    "small_noisy_2d",
    "steps",
]

# The tables the run plan (helmholtz_pinn.fit.plan) applies to settings left None. The
# network sizes and the voxels per step by the data's dimension: one 3-D fit holds the
# whole volume in one network: twice the 2-D u-network and frequencies, a 128 x 3
# mu-network.
WIDTH = {2: 256, 3: 512}
N_FEATURES = {2: 128, 3: 256}
MU_WIDTH = {2: 64, 3: 128}
MU_DEPTH = {2: 2, 3: 3}
BATCH_SIZE = {2: 2048, 3: 2048}
# Adam's steps and starting rate where the Config leaves them None (and the data are not
# in the small fit's region, :func:`fit_size`).
STEPS = 10_000
LEARNING_RATE = 1e-3
# The u-network's Fourier factor: 0.5 for one 3-D fit and for 2-D data whose best field's
# noise fraction is at least NOISY_2D, else 1.0 (and the noisy rule below).
SIGMA_FACTOR_U_3D = 0.5
SIGMA_FACTOR_U_2D = 1.0
NOISY_2D = 0.15
# Data whose best field's noise fraction is below CLEAN_NOISE count as clean (the L-BFGS
# phase runs on them; the noisy rules start here): clean members 0.0003-0.0044, -20 dB
# 0.063-0.079.
CLEAN_NOISE = 0.02
# Below COARSE voxels per shortest wavelength, with noise (the best field's noise fraction
# at least CLEAN_NOISE), is where the maps failed silently (a liver-like volume at
# -20 dB, 8 voxels: 26 % G'; clean it was 3.6 %).
COARSE = 10.0
# 2-D data with fewer mask voxels than this are small against the tuned 80 x 100 grids
# (8000 voxels): noisy ones get the small fit (:func:`small_noisy_2d`: the sweep's noisy
# organ slices of 308-800 voxels collapsed at the default networks, 79-99 % G'); for
# clean ones the CPU-sized networks are a proposal (the bundled example, 30 x 36, gave
# 36 % at the default networks and 15 % at the CPU-sized ones).
SMALL_2D = 2000
SMALL_NETWORKS = dict(width=64, mu_width=32, n_features=64)  # those of config.cpu_settings
# The PDE loss's weight where the Config leaves it None: PDE_WEIGHT, NOISY_PDE_WEIGHT for
# three-component volumes where coarse sampling meets noise (below COARSE voxels, noise
# fraction at least CLEAN_NOISE) or whose noise fraction is at least NOISY_3C (the
# sweep's -10 dB organs read 0.23-0.28, its -20 dB ones 0.07-0.09): a stronger physics
# prior where the data fit the noise. Other -20 dB data keep PDE_WEIGHT (a good organ
# fit lost accuracy at 0.2 and 0.3). One or two components: proposed; 2-D slices of
# three components: not measured. Why: docs/defaults.md, "The PDE weight on noisy data".
PDE_WEIGHT = 0.1
NOISY_PDE_WEIGHT = 0.3
NOISY_3C = 0.15
# Noisy data of one or two components (the best field's noise fraction at least
# CLEAN_NOISE) sampled with fewer than TUNED_VOXELS voxels per shortest
# wavelength (below the tuned region) get the u-network's Fourier factor NOISY_FACTOR_U,
# NOISIER_FACTOR_U from a noise fraction of NOISY_2D: at today's factors the
# u-network reproduced the noise and the map came out 1.3-7x low. Three components: not
# measured to help (docs/defaults.md, "Noisy data below the tuned sampling").
TUNED_VOXELS = 14.0
NOISY_FACTOR_U = 0.1
NOISIER_FACTOR_U = 0.05
# 2-D data (clean or noisy below NOISY_2D) sampled with fewer than COARSE_2D voxels per
# shortest wavelength get the 3-D factor SIGMA_FACTOR_U_3D: at 1.0 the u-network's
# features reach the voxels' Nyquist there, bend between the voxels, and the modulus came
# out low (docs/defaults.md, "Coarse 2-D data").
COARSE_2D = TUNED_VOXELS
# Three-component noisy data below COARSE_3C voxels per shortest wavelength get
# NOISY_FACTOR_U too (3.5 mm organs at 7.4-7.6 voxels: 27.9 -> 14.2 % tuning, 41.8 ->
# 19.2 % held-out); at 10-10.5 voxels (the liver-like organs) the factor made the map
# worse (13.4 -> 16.9 %), so the limit sits between.
COARSE_3C = 9.0
# The slice axis's Fourier scale over the in-plane one (Config.sigma_ratio_z, 3-D fits)
# for clean data at the CPU size (u-networks of at most SMALL_WIDTH; proposed for wider
# ones) as the wave's own ratio of through-plane to in-plane wavenumber,
# sqrt(2 s / (1 - s)) for the through-plane share s of |k|^2 estimated from u
# (wavelength.Wavelength.through_plane), held within SIGMA_RATIO_Z; noisy data (noise
# fraction >= CLEAN_NOISE) keep the lower bound, 0.25 (on the -20 dB liver-like tuning
# organ, s = 0.6, ratio 1 gave 22.9 % against 13.4 %). The slab volumes 0.25 was tuned
# on carry s = 0.01-0.03 (ratio 0.14-0.25). At the default sizes it was mixed. Why:
# docs/defaults.md, "The slice axis's Fourier scale".
SIGMA_RATIO_Z = (0.25, 1.0)
SMALL_WIDTH = SMALL_NETWORKS["width"]


class DataFacts(NamedTuple):
    """What the data show, as the rules read it: ``voxels_per_wavelength`` (the shortest
    shear wavelength estimated from u, in mean in-plane voxels), ``wavelength_m`` (the
    same in m), ``field_of_view_m`` (the largest extent (n - 1) h, m), ``grid``,
    ``mask_voxels``, ``noise`` (the best field's noise fraction), ``n_comp``, ``ndim``,
    ``n_freq`` and ``through_plane`` (the share of |k|^2 along the slice axis at the
    shortest wavelength, NaN in 2-D)."""

    voxels_per_wavelength: float
    wavelength_m: float
    field_of_view_m: float
    grid: tuple[int, ...]
    mask_voxels: int
    noise: float
    n_comp: int
    ndim: int
    n_freq: int
    through_plane: float = float("nan")


class Default(NamedTuple):
    """A data-derived setting: ``value``, ``rule`` (in words, for metrics.json) and
    ``backed`` (True: measured, docs/defaults.md; False: a proposal awaiting the sweep)."""

    value: Any
    rule: str
    backed: bool


def facts_of(dataset) -> DataFacts:
    """The :class:`DataFacts` of a :class:`~helmholtz_pinn.io.dataset.Dataset`: the
    wavelength from :func:`helmholtz_pinn.assess.wavelength.estimate` (the shortest over
    the frequencies), the noise from :func:`helmholtz_pinn.pinn.problem.best_noise`.
    Raises an InputError where u shows no wavelength."""
    lam = wavelength.estimate_dataset(dataset)
    if not math.isfinite(lam.shortest_metres):
        raise InputError(
            "no shear wavelength could be estimated from u (a field of noise, or no axis of "
            "3 valid voxels); give sigma_u=, sigma_mu= and pde_margin= explicitly"
        )
    return DataFacts(
        voxels_per_wavelength=lam.shortest_voxels,
        wavelength_m=lam.shortest_metres,
        field_of_view_m=problem.field_of_view(dataset),
        grid=tuple(dataset.grid),
        mask_voxels=int(np.count_nonzero(dataset.mask)),
        noise=problem.best_noise(dataset),
        n_comp=dataset.n_comp,
        ndim=dataset.ndim,
        n_freq=dataset.n_freq,
        through_plane=lam.through_plane_at_shortest,
    )


def _noisy_coarse(facts: DataFacts) -> bool:
    return facts.voxels_per_wavelength < COARSE and facts.noise >= CLEAN_NOISE


def noisy_below_tuned(facts: DataFacts) -> bool:
    """Noisy data of one or two components (best noise fraction at least
    ``CLEAN_NOISE``) sampled with fewer than :data:`TUNED_VOXELS` voxels per
    shortest wavelength: :func:`noisy_coarse_fit` of fewer than three components."""
    return facts.n_comp < 3 and noisy_coarse_fit(facts)


def noisy_coarse_fit(facts: DataFacts) -> bool:
    """Noisy data (best noise fraction at least ``CLEAN_NOISE``) of any number of
    components sampled with fewer than :data:`TUNED_VOXELS` voxels per shortest
    wavelength: the region of :func:`fit_size`'s small fit."""
    return facts.noise >= CLEAN_NOISE and facts.voxels_per_wavelength < TUNED_VOXELS


def small_noisy_2d(facts: DataFacts) -> bool:
    """Noisy 2-D data (best noise fraction at least ``CLEAN_NOISE``) of fewer than
    :data:`SMALL_2D` mask voxels, at any sampling: the other region of :func:`fit_size`'s
    small fit (u's wavelength reads long on a slice of 3-D motion, so the sampling rule
    alone misses these fields)."""
    return facts.ndim == 2 and facts.noise >= CLEAN_NOISE and facts.mask_voxels < SMALL_2D


def base_factor_u(ndim: int, noise: float) -> float:
    """The u-network's factor in the tuned region: :data:`SIGMA_FACTOR_U_3D` for 3-D data
    and for 2-D data whose best field's noise fraction ``noise`` is at least
    :data:`NOISY_2D` (a smoother u-network that does not fit the noise), else
    :data:`SIGMA_FACTOR_U_2D`."""
    return SIGMA_FACTOR_U_3D if ndim == 3 or noise >= NOISY_2D else SIGMA_FACTOR_U_2D


def sigma_factor_u(facts: DataFacts) -> Default:
    """The u-network's factor of the Fourier scale (cycles per shortest wavelength).

    0.5 for 3-D data, for 2-D data of noise fraction at least ``NOISY_2D`` and for 2-D
    data below :data:`COARSE_2D` voxels per wavelength, else 1.0 (the tuned region).
    Noisy data of one or two components below the tuned sampling
    (:func:`noisy_below_tuned`): :data:`NOISY_FACTOR_U`, :data:`NOISIER_FACTOR_U` from a
    noise fraction of ``NOISY_2D``: a u-network that cannot follow voxel-scale
    noise, whose Laplacian would otherwise pull the modulus low. Three components:
    :data:`NOISY_FACTOR_U` below :data:`COARSE_3C` voxels per wavelength (with the
    small fit of :func:`fit_size`), and for a 2-D field in the small fit from a noise
    fraction of ``NOISY_2D`` (the sweep's organ slices at -10 dB: 32-96 % at 0.5,
    17-42 % at 0.1)."""
    noisy_2d = facts.ndim == 2 and facts.noise >= NOISY_2D
    base = base_factor_u(facts.ndim, facts.noise)
    rule = f"{base:g}: " + ("3-D data" if facts.ndim == 3 else "2-D data, noise fraction ")
    if facts.ndim == 2:
        rule += f"{facts.noise:.3g} {'>=' if noisy_2d else '<'} {NOISY_2D:g}"
    if base == SIGMA_FACTOR_U_2D and facts.voxels_per_wavelength < COARSE_2D:
        base = SIGMA_FACTOR_U_3D
        rule = (
            f"{base:g}: 2-D data at {facts.voxels_per_wavelength:.3g} voxels per wavelength "
            f"(< {COARSE_2D:g})"
        )
    coarse_3c = facts.n_comp == 3 and noisy_coarse_fit(facts)
    coarse_3c = coarse_3c and facts.voxels_per_wavelength < COARSE_3C
    if facts.n_comp == 3 and noisy_2d and fit_size(facts).value:  # in the small fit
        rule = (
            f"{NOISY_FACTOR_U:g}: a three-component 2-D field in the small fit, noise "
            f"fraction {facts.noise:.3g} (>= {NOISY_2D:g})"
        )
        return Default(NOISY_FACTOR_U, rule, True)
    if not (noisy_below_tuned(facts) or coarse_3c):
        return Default(base, rule, True)
    value = NOISIER_FACTOR_U if facts.noise >= NOISY_2D and not coarse_3c else NOISY_FACTOR_U
    limit = COARSE_3C if coarse_3c else TUNED_VOXELS
    rule = (
        f"{value:g}: {facts.n_comp} component(s), noise fraction {facts.noise:.3g} (>= "
        f"{CLEAN_NOISE:g}) at {facts.voxels_per_wavelength:.3g} voxels per "
        f"wavelength (< {limit:g})"
    )
    return Default(value, rule, True)


def sigma_ratio_z(through_plane: float, noise: float, width: int) -> Default:
    """The slice axis's Fourier scale over the in-plane one (3-D fits, both networks).

    0.25, the lower bound of :data:`SIGMA_RATIO_Z`, for noisy data (best field's noise
    fraction ``noise`` at least :data:`CLEAN_NOISE`), for waves in the slice plane and
    where there is no estimate (NaN: 2-D data, fewer than 3 slices). For clean data the
    wave's through-plane over its in-plane wavenumber per axis, ``sqrt(2 s / (1 - s))``
    for the through-plane share ``s`` of ``|k|^2`` estimated from u
    (``DataFacts.through_plane``), held within :data:`SIGMA_RATIO_Z` (1, isotropic, from
    ``s`` = 1/3: a wave field isotropic in 3-D): backed for u-networks of at most
    :data:`SMALL_WIDTH` (the CPU size, where it was better on every clean organ), a
    proposal for wider ones (``width``; mixed at the default sizes)."""
    low, high = SIGMA_RATIO_Z
    if not math.isfinite(through_plane):
        return Default(low, f"{low:g}: no through-plane wavenumber estimated from u", True)
    if noise >= CLEAN_NOISE:
        return Default(low, f"{low:g}: noisy data (noise fraction {noise:.3g})", True)
    s = min(max(through_plane, 0.0), 1.0)
    own = math.sqrt(2 * s / (1 - s)) if s < 1 else math.inf
    value = min(max(own, low), high)
    rule = (
        f"{value:.3g}: the wave's through-plane / in-plane wavenumber {own:.3g} (share "
        f"{s:.3g} of |k|^2 along the slice axis), within {low:g}-{high:g}"
    )
    return Default(value, rule, value == low or width <= SMALL_WIDTH)


def fourier_scales(facts: DataFacts, factor_u: float, factor_mu: float = 0.5) -> Default:
    """(sigma_u, sigma_mu), cycles per field of view: each factor times L / lambda_min,
    lambda_min the shortest wavelength estimated from u (today's rule reads lambda_min
    from the AHI estimate of mu_ref; on the tuning data the two agree within 2-3 %)."""
    cycles = facts.field_of_view_m / facts.wavelength_m
    rule = (
        f"factors {factor_u:g} / {factor_mu:g} times L / lambda = {cycles:.3g} (lambda "
        f"{facts.wavelength_m * 1e3:.3g} mm estimated from u)"
    )
    return Default((factor_u * cycles, factor_mu * cycles), rule, True)


def fit_size(facts: DataFacts) -> Default:
    """The small fit where noise meets coarse sampling (:func:`noisy_coarse_fit`) or a
    small 2-D field (:func:`small_noisy_2d`): the Config fields of
    :func:`helmholtz_pinn.config.cpu_settings` for the data's components (64-wide
    networks, mu 32, 64 Fourier features; 3000 steps of 512 voxels at 2e-3 for one or two
    components, 5000 of 1024 at 1e-3 for three). Elsewhere ``{}`` (the tables by
    dimension, :data:`STEPS`, :data:`LEARNING_RATE`).

    Why: at the default sizes (256-512 wide, 10 000 steps) the networks fitted the noise
    and the map collapsed (69-92 % G' on every noisy member below the tuned sampling,
    79-99 % on the noisy organ slices of 308-800 voxels); the small fit, with the u
    factor of :func:`sigma_factor_u`, gave 3.6-27.6 % on the members below the tuned
    sampling (docs/defaults.md, "Noisy data below the tuned sampling")."""
    if noisy_coarse_fit(facts):
        rule = (
            f"the small fit: noise fraction {facts.noise:.3g} (>= {CLEAN_NOISE:g}) at "
            f"{facts.voxels_per_wavelength:.3g} voxels per wavelength (< {TUNED_VOXELS:g})"
        )
    elif small_noisy_2d(facts):
        rule = (
            f"the small fit: a noisy 2-D field (noise fraction {facts.noise:.3g} >= "
            f"{CLEAN_NOISE:g}) of {facts.mask_voxels} voxels (< {SMALL_2D})"
        )
    else:
        return Default({}, "the sizes by dimension", True)
    return Default(cpu_settings(facts.n_comp), rule, True)


def network_size(facts: DataFacts) -> Default:
    """``width``, ``n_features``, ``mu_width``, ``mu_depth`` as a dict.

    Backed: today's sizes by dimension (``fit.plan.WIDTH`` etc.), the small fit's
    where noise meets coarse sampling (:func:`fit_size`). Proposal: clean 2-D data of
    fewer than :data:`SMALL_2D` mask voxels get the CPU-sized networks (one measurement:
    the bundled 30 x 36 example at 15 % against 36 %, with the CPU-sized batch and steps
    too)."""
    d = facts.ndim
    sizes = dict(
        width=WIDTH[d],
        n_features=N_FEATURES[d],
        mu_width=MU_WIDTH[d],
        mu_depth=MU_DEPTH[d],
    )
    small = fit_size(facts)
    if small.value:
        return Default({**sizes, **SMALL_NETWORKS}, small.rule, True)
    if d == 2 and facts.mask_voxels < SMALL_2D:
        rule = f"a small 2-D field ({facts.mask_voxels} < {SMALL_2D} voxels): CPU-sized networks"
        return Default({**sizes, **SMALL_NETWORKS}, rule, False)
    return Default(sizes, f"the {d}-D sizes", True)


def batch_size(facts: DataFacts) -> Default:
    """Voxels per step: today's 2048 (a 3-D fit at 4096 was as accurate at twice the
    time), the small fit's where noise meets coarse sampling (:func:`fit_size`); a mask
    with fewer voxels is taken whole by the step (``train.Spec``)."""
    value = fit_size(facts).value.get("batch_size", BATCH_SIZE[facts.ndim])
    if facts.mask_voxels <= value:
        return Default(value, f"{value}: the whole mask ({facts.mask_voxels} voxels)", True)
    return Default(value, f"{value} voxels per step", True)


def pde_margin(facts: DataFacts, pde: str) -> Default:
    """Voxels at the field of view's in-plane edges without a PDE residual: the form's
    ``pde_margin`` fraction (:class:`helmholtz_pinn.pinn.forms.Form`, by dimension) of the
    wavelength estimated from u, in voxels, rounded, at least 1, and (a guard, not a
    measurement) at most a quarter of the smallest in-plane axis; 0 where the form has
    none."""
    fraction = forms.get(pde).pde_margin.get(facts.ndim, 0.0)
    if not fraction:
        return Default(0, f"0: no margin for the {pde} form in {facts.ndim}-D", True)
    value = max(1, round(fraction * facts.voxels_per_wavelength))
    cap = max(1, min(facts.grid[:2]) // 4)
    what = "the patch half-width" if fraction == weak.HALF_WIDTH else f"{fraction:.3g}"
    rule = f"{what} of {facts.voxels_per_wavelength:.3g} voxels per wavelength"
    if value > cap:
        return Default(cap, f"{rule}, capped at a quarter of the in-plane grid", False)
    return Default(value, rule, True)


def steps(facts: DataFacts) -> Default:
    """Adam steps: :data:`STEPS` (20 000 gave 1.8 -> 1.5 % on four-target at twice the
    time), the small fit's where noise meets coarse sampling (:func:`fit_size`)."""
    small = fit_size(facts)
    if small.value:
        return Default(small.value["steps"], small.rule, True)
    return Default(STEPS, f"{STEPS}: the tuned region's", True)


def learning_rate(facts: DataFacts) -> Default:
    """Adam's starting rate: :data:`LEARNING_RATE` (3e-3 was within the run-to-run
    spread on four-target), the small fit's where noise meets coarse sampling
    (:func:`fit_size`)."""
    small = fit_size(facts)
    if small.value:
        return Default(small.value["learning_rate"], small.rule, True)
    return Default(LEARNING_RATE, f"{LEARNING_RATE:g}: the tuned region's", True)


def pde_weight(facts: DataFacts) -> Default:
    """The PDE loss's weight. Backed: :data:`PDE_WEIGHT` (clean four-target and the
    clinical tuning members at 1.5-2.5 mm); :data:`NOISY_PDE_WEIGHT` for three-component
    volumes where coarse sampling meets noise (fewer than :data:`COARSE` voxels per
    wavelength, noise fraction at least :data:`CLEAN_NOISE`) or whose noise fraction is at
    least :data:`NOISY_3C`: a stronger physics prior where the data fit the noise
    (docs/defaults.md, "The PDE weight on noisy data"). Proposal: :data:`NOISY_PDE_WEIGHT`
    for one or two components where coarse sampling meets noise."""
    coarse = _noisy_coarse(facts)
    if facts.n_comp == 3 and facts.ndim == 3 and (coarse or facts.noise >= NOISY_3C):
        why = (
            f"coarse sampling ({facts.voxels_per_wavelength:.3g} voxels per wavelength, < "
            f"{COARSE:g}) meeting noise ({facts.noise:.3g})"
            if coarse
            else f"noise fraction {facts.noise:.3g} (>= {NOISY_3C:g})"
        )
        rule = f"{NOISY_PDE_WEIGHT:g}: a three-component volume, {why}"
        return Default(NOISY_PDE_WEIGHT, rule, True)
    if coarse:
        rule = (
            f"{NOISY_PDE_WEIGHT:g}: coarse sampling ({facts.voxels_per_wavelength:.3g} "
            f"voxels per wavelength) meeting noise ({facts.noise:.3g})"
        )
        return Default(NOISY_PDE_WEIGHT, rule, False)
    return Default(PDE_WEIGHT, f"{PDE_WEIGHT:g}: the tuned region's", True)


def lbfgs_runs(facts: DataFacts, pde: str, members: int = 1) -> Default:
    """Whether the L-BFGS phase runs: today's rule (``fit.plan.lbfgs_steps``): one navier
    fit (``members`` 1: one dataset, no ensemble) of clean data (best noise fraction
    below ``CLEAN_NOISE``) whose mask has at most ``Config.lbfgs_points``
    voxels. Steps are :func:`steps`' (above ``Config.lbfgs_from``)."""
    reasons = []
    if pde != "navier" or members != 1:
        reasons.append("not one navier fit")
    if facts.noise >= CLEAN_NOISE:
        reasons.append(f"noise {facts.noise:.3g} >= {CLEAN_NOISE:g}")
    if facts.mask_voxels > Config.lbfgs_points:
        reasons.append(f"{facts.mask_voxels} voxels > {Config.lbfgs_points}")
    if reasons:
        return Default(False, "no phase: " + "; ".join(reasons), True)
    return Default(True, "one clean navier fit of at most lbfgs_points voxels", True)


def settings(facts: DataFacts, pde: str, members: int = 1) -> dict[str, Default]:
    """Every rule's :class:`Default` for a fit of form ``pde`` (resolved) with
    ``members`` members, keyed by the :class:`~helmholtz_pinn.config.Config` field it
    sets (``network`` and ``fourier`` carry several; ``lbfgs`` is a yes/no)."""
    factor, network = sigma_factor_u(facts), network_size(facts)
    return dict(
        sigma_factor_u=factor,
        fourier=fourier_scales(facts, factor.value, Config.sigma_factor_mu),
        network=network,
        batch_size=batch_size(facts),
        pde_margin=pde_margin(facts, pde),
        sigma_ratio_z=sigma_ratio_z(facts.through_plane, facts.noise, network.value["width"]),
        steps=steps(facts),
        learning_rate=learning_rate(facts),
        pde_weight=pde_weight(facts),
        lbfgs=lbfgs_runs(facts, pde, members),
    )


def overrides(rules: dict[str, Default]) -> dict[str, Any]:
    """Config fields from :func:`settings` (for a run that applies every rule, the
    sweep's ``rules`` arm): sigma_u, sigma_mu, the network sizes, batch_size, pde_margin,
    sigma_ratio_z, steps, learning_rate, pde_weight and lbfgs_steps 0 where the phase
    does not run."""
    sigma_u, sigma_mu = rules["fourier"].value
    out = dict(sigma_u=sigma_u, sigma_mu=sigma_mu, **rules["network"].value)
    names = ("batch_size", "pde_margin", "sigma_ratio_z", "steps", "learning_rate", "pde_weight")
    for name in names:
        out[name] = rules[name].value
    if not rules["lbfgs"].value:
        out["lbfgs_steps"] = 0
    return out
