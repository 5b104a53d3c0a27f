"""Plausibility checks of a finished fit (:func:`fit_quality`): failures that still give a
map (a collapsed modulus, a residual that never fell, a network fitting the noise), and
where the caller passes the data's facts (:func:`data_facts`) failures of the data space
(coarse sampling meeting noise, a whole map off the data's own wavelength, a slice of 3-D
motion), and the wave the map predicts against the classical map's (:func:`resimulation_facts`).
Each check is recorded in ``metrics.json`` as ``fit_quality``; a failed one is also a
:class:`FitQualityWarning`. Plain numpy; moduli in Pa, losses nondimensional.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from helmholtz_pinn.assess import baselines, resimulation, stencils, wavelength
from helmholtz_pinn.assess.laws import SMALL_FIT_SPREAD, consistency_limit
from helmholtz_pinn.assess.metrics import per_frequency
from helmholtz_pinn.errors import InputError

__all__ = [
    "QUALITY_CHECKS",
    "QUALITY_LIMITS",
    "FitQualityWarning",
    "data_facts",
    "fit_quality",
    "resimulation_facts",
    "baseline_resimulation",
    "law_limit",
    "slice_of_3d_motion",
    "through_plane_share",
]


class FitQualityWarning(UserWarning):
    """A finished fit failed a plausibility check of :func:`fit_quality`."""


QUALITY_CHECKS = (
    "modulus_range",
    "ahi_agreement",
    "pde_residual",
    "data_vs_noise",
    "data_fit",
    "loss_decrease",
    "seed_agreement",
    "law_consistency",
    "resolution",
    "wave_modulus",
    "slice_motion",
    "one_component",
    "slice_axis",
    "resimulation",
)
# Limits of the checks (fractions and factors; see fit_quality). From ``voxels`` on: the
# data-space checks; why each is what it is: docs/accuracy.md, "Fits that say they are off",
# and for ``resim_*`` docs/reliability.md, "Fits that are far off".
QUALITY_LIMITS = dict(
    low=0.02, high=50.0, at_bound=0.5, ahi=2.0, pde=0.3, noise=0.25, fit=2e-3, loss=0.5,
    seeds=0.1, voxels=10.0, clean=0.02, wave=2.0, through_plane=0.015, slice_axis=0.25,
    slice_axis_3c=0.365, loud=0.15, resim_curl=1.2, resim_ahi=2.0, resim_floor=0.1,
)  # fmt: skip
_UNITS = "check the data's spacing (m) and frequency (Hz)"
# ``resolution`` stood for the maps that collapsed where coarse sampling met noise at the
# default network sizes; the small fit took their place, and on the sweep's tuning members
# it flagged only good small fits (6-15 %) while the poor ones were flagged by the data
# checks (docs/accuracy.md, "Noisy members below the tuned sampling").
SMALL_FIT_RESOLUTION = (
    "skipped: the small fit of noisy data at coarse sampling or on a small 2-D field (its "
    "poor maps show in the data checks: resimulation, wave_modulus, ahi_agreement, "
    "one_component)"
)
# ``data_fit`` in the small fit: its smooth u-network leaves about the limit's misfit beyond
# the noise on good and poor maps alike (docs/accuracy.md, "Fits that say they are off").
SMALL_FIT_DATA_FIT = (
    "skipped: the small fit of noisy data at coarse sampling or on a small 2-D field (its "
    "smooth u-network leaves a misfit beyond the noise on good and poor maps alike)"
)


class FitCheck(TypedDict):
    """One check of :func:`fit_quality`: ``value`` against ``threshold`` (a number, or a
    [low, high] range), ``passed``, ``skipped`` (no value could be measured: passed), and
    ``message``: what was measured and, on failure, what to try."""

    name: str
    passed: bool
    skipped: bool
    value: float | None
    threshold: float | list[float] | None
    message: str


def fit_quality(
    mu: np.ndarray,
    mask: np.ndarray,
    mu_ref: float | None,
    *,
    ahi_estimate: float | None = None,
    final_data: float | None = None,
    final_pde: float | None = None,
    noise_fraction: Any = None,
    field_weight: Any = None,
    history: list[dict] | None = None,
    mu_std: np.ndarray | None = None,
    members: int = 1,
    law_spread: float | None = None,
    spread_max: float = 0.02,
    mu_model: str | None = None,
    frequency: Any = None,
    spacing: Any = None,
    rho: float = 1000.0,
    wavelength_m: Any = None,
    through_plane_share: float | None = None,
    slice_axis_share: float | None = None,
    slices: int | None = None,
    components: int | None = None,
    laws_tried: tuple[str, ...] = (),
    resimulation: dict | None = None,
    small_fit: bool = False,
    checks: tuple[str, ...] = QUALITY_CHECKS,
) -> list[FitCheck]:
    """Plausibility checks of a finished fit, to catch failures that still give a map.

    Args:
      mu: complex modulus, Pa, ``grid`` or ``(F, *grid)``; mask: bool ``grid``.
      mu_ref: the reference modulus of the run, Pa. ahi_estimate: the data's AHI
        estimate (:func:`helmholtz_pinn.assess.baselines.estimate_modulus`), Pa.
      final_data, final_pde: nondimensional losses of the last step: the data misfit
        and the mean ``|r|^2``, both per unit field power (a PDE loss of 1 is a residual
        as large as the field, as with ``mu = 0``).
      noise_fraction, field_weight: estimated noise RMS / field RMS and the data loss's
        weight per (F, C), nested lists (None entries are ignored; weights default to 1).
      history: the host loop's per-block records (``loss``, ``last_loss``; lists per
        member in batched runs: the worst member is checked).
      mu_std: an ensemble's spread of mu (Re and Im standard deviations over its seeds,
        Pa, the shape of ``mu``); None for one seed.
      members: the ensemble size E: ``final_data`` holds E values (seeds) per dataset or
        slice, in that order.
      law_spread: how much the per-frequency factors on the fitted law's modulus that
        best satisfy the PDE differ (:func:`helmholtz_pinn.pinn.dispersion.spread`); None
        where no law was fitted (one frequency, per-frequency moduli, a baseline).
      spread_max: the law_consistency limit, the fit's PDE form's ``spread_max``.
      mu_model: the law setting the user asked for (``"auto"`` where the data chose it;
        None: not known): a failed ``law_consistency`` never advises it.
      frequency, spacing, rho: the data's frequencies (Hz), voxel size per axis (m) and
        density (kg/m^3), for ``resolution`` and ``wave_modulus``.
      wavelength_m: the shear wavelength per frequency estimated from u (m,
        :func:`helmholtz_pinn.assess.wavelength.estimate`), for ``wave_modulus``.
      through_plane_share: a 2-D fit of three components: the through-plane component's
        share of the field power (:func:`data_facts`); None otherwise.
      slice_axis_share, slices: a volume: the share of the wave's ``|k|^2`` along the
        slice axis estimated from u at the shortest wavelength
        (:attr:`helmholtz_pinn.assess.wavelength.Wavelength.through_plane`) and the
        number of slices (:func:`data_facts`); None otherwise.
      components: the data's displacement components, for ``resolution`` (one component
        is a failure region at coarse sampling), ``one_component`` and ``slice_axis``;
        None: not known.
      laws_tried: the laws fitted to these data before one was kept (mu_model="auto"):
        law_consistency's advice then names only what was not tried.
      resimulation: the re-simulation misfits of the map and of a classical map and the
        noise floor, per frequency (:func:`resimulation_facts`); None: not measured.
      small_fit: the fit is the small fit of noisy data at coarse sampling or on a small
        2-D field (:func:`helmholtz_pinn.fit.defaults.fit_size`): ``law_consistency`` allows
        :data:`.laws.SMALL_FIT_SPREAD` times ``spread_max``; ``resolution`` and
        ``data_fit`` are skipped.
      checks: the names (of :data:`QUALITY_CHECKS`) to run, in that order.

    Returns one dict per check: ``name``, ``passed`` (bool), ``skipped`` (an input is
    missing; ``passed`` is then True), ``value``, ``threshold`` and ``message`` (what
    was measured; on failure also what to try). Limits (:data:`QUALITY_LIMITS`):

    - ``modulus_range``: fraction of mask voxels (all frequencies) where G' is below 2 %
      or above 50x ``mu_ref``, or not finite; fails above 0.5 (a collapsed modulus);
    - ``ahi_agreement``: median G' / ``ahi_estimate``; fails outside [1/2, 2];
    - ``pde_residual``: ``final_pde``; fails above 0.3 (a residual RMS over 55 % of the
      field's: the fitted field does not obey the PDE);
    - ``data_vs_noise``: ``final_data`` over the noise floor, the weighted mean of
      ``noise_fraction ^ 2`` (the data loss of the noise-free field); fails below 0.25
      (the network reproduces the noise); skipped without a noise estimate;
    - ``data_fit``: ``final_data`` minus that noise floor (0 without an estimate), the
      misfit the noise does not explain, of the best member of each dataset or slice (an
      ensemble leaves poorer members out), the worst of those; fails above 2e-3 (an RMS
      misfit of 4.5 % of the field beyond the noise: the networks did not reproduce the
      data, a poorer optimum or a form that does not describe them); skipped for the
      small fit (``small_fit``: its smooth u-network leaves about that misfit on good
      and poor maps alike);
    - ``loss_decrease``: the last step's loss over the first block's mean loss, each less
      the noise floor (no loss goes below it, so on noisy data the plain ratio of a fit
      at the noise stays high); fails above 0.5 (the loss never left its start);
    - ``seed_agreement``: the median over the mask (all frequencies) of the seeds' spread
      of G' over the mean G'; fails above 0.1 (the map depends on the initialisation, not
      only on the data); skipped for one seed;
    - ``law_consistency``: ``law_spread``; fails above the form's ``spread_max``,
      0.0025 for navier and 0.02 otherwise (the fitted wave wants a modulus that far off the law's
      at some frequency: the law does not describe the data's dispersion); skipped
      without a law; the limit grows with the best field's noise fraction and with
      ``final_pde`` beyond a converged fit's (:func:`.laws.consistency_limit`); on a
      slice of 3-D motion (``through_plane_share`` failing ``slice_motion``) its advice
      is the volume, not another law;
    - ``resolution``: voxels (mean in-plane size) per shortest shear wavelength of the
      fitted modulus, sqrt(median |mu_f| / rho) / f, the lowest over the frequencies;
      fails below 10 where the data are noisy (best field's noise fraction at least
      0.02), the fit is 2-D or the data have one component (coarse sampling meeting
      noise, a slice or a single component: maps 17-36 % off); skipped without
      ``frequency`` and ``spacing`` and for the small fit (``small_fit``);
    - ``wave_modulus``: median |mu_f| over the mask / rho (f lambda_f)^2, the modulus
      the data's own wavelength implies, the frequency farthest from 1; fails outside
      [1/2, 2] (the whole map off, as a map that falls towards 0 where the wave
      has died out); skipped without ``wavelength_m``;
    - ``slice_motion``: ``through_plane_share``; fails above 0.015 (a 2-D slice of motion
      that is truly 3-D: the through-plane derivatives the 2-D fit takes as zero are
      not); skipped for volumes and fewer than three components;
    - ``one_component``: ``components``; fails for one (one component of elastic motion
      carries a compressional part the scalar equation lacks: one through-plane
      component of elastic organs gave maps 22-77 % off, whatever the noise); skipped
      where the number is not known;
    - ``slice_axis``: ``slice_axis_share``; fails from 0.25 (a quarter of the wave's
      curvature along the slice axis: a wave that runs through a stack of slices,
      which the fitted networks, their slice axis smoothed by ``sigma_ratio_z``, follow
      poorly: organs driven that way were 12-41 % off with no other check firing), from
      0.365 for three ``components`` whose best field's noise fraction is below 0.15
      (the elastic fit follows such waves further: good tuning organs at 0.28-0.29,
      poor ones from 0.44); skipped for 2-D data and stacks of fewer than 3 slices;
    - ``resimulation``: the wave the map predicts (scalar Helmholtz re-solved inside the
      mask with the data on its rim, :mod:`helmholtz_pinn.assess.resimulation`) misses
      the measured one by ``m_f``; the classical map's by ``b_f`` (curl-MDEV on
      three-component volumes, else smoothed AHI); the noise alone by ``n_f``. The value
      is sqrt(sum_f m_f^2 / sum_f max(b_f, n_f, 0.1)^2) (a wave within 10 % of the data
      is never called off); fails above 1.2 against curl-MDEV and 2.0 against AHI (AHI
      is the scalar model's own local inverse, so on elastic data it reproduces u better
      than the true modulus does): the map reproduces the data clearly worse than the
      classical map, i.e. it is far off, e.g. too soft overall or fallen towards 0 where
      the wave is weak; skipped without it.

    The limits' measurements: docs/defaults.md and docs/accuracy.md.
    """
    unknown = set(checks) - set(QUALITY_CHECKS)
    if unknown:
        raise InputError(f"unknown checks {sorted(unknown)}; valid: {QUALITY_CHECKS}")
    g = per_frequency(mu, np.shape(mask), "mu").real[:, np.asarray(mask, bool)]
    median = float(np.nanmedian(g)) if np.isfinite(g).any() else math.nan
    floor = None if noise_fraction is None else _noise_power(noise_fraction, field_weight)
    found = {
        "modulus_range": _range_check(g, median, mu_ref),
        "ahi_agreement": _ahi_check(median, ahi_estimate),
        "pde_residual": _pde_check(final_pde),
        "data_vs_noise": _noise_check(final_data, floor),
        "data_fit": SMALL_FIT_DATA_FIT
        if small_fit
        else _fit_check(final_data, floor or 0.0, members),
        "loss_decrease": _loss_check(history, floor or 0.0),
        "seed_agreement": _seed_check(mu, mu_std, mask),
        "law_consistency": _law_check(
            law_spread,
            law_limit(spread_max, noise_fraction, final_pde, small_fit),
            mu_model,
            tuple(laws_tried),
            slice_of_3d_motion(through_plane_share),
        ),
        "resolution": SMALL_FIT_RESOLUTION
        if small_fit
        else _resolution_check(
            mu, mask, frequency, spacing, rho, _best_noise(noise_fraction), components
        ),
        "wave_modulus": _wave_check(mu, mask, frequency, rho, wavelength_m),
        "slice_motion": _slice_check(through_plane_share),
        "one_component": _component_check(components),
        "slice_axis": _slice_axis_check(
            slice_axis_share, slices, components, _best_noise(noise_fraction)
        ),
        "resimulation": _resimulation_check(resimulation),
    }
    out = []
    for name in checks:
        check = found[name]
        if isinstance(check, str):  # the reason it was skipped
            check = (None, None, True, check, "")
        value, threshold, passed, measured, advice = check
        message = measured if passed else f"{measured}; {advice}"
        out.append(
            FitCheck(
                name=name,
                passed=bool(passed),
                skipped=value is None,
                value=value,
                threshold=threshold,
                message=message,
            )
        )
    return out


def _range_check(g: np.ndarray, median: float, mu_ref: float | None):
    lim = QUALITY_LIMITS
    if not np.isfinite(g).any():  # no map at all, with or without a reference
        return (
            1.0,
            lim["at_bound"],
            False,
            "G' is not finite anywhere in the mask",
            "the data hold no usable wave there: try checking that u is not zero or constant",
        )
    if mu_ref is None:
        return "skipped: no reference modulus"
    lo, hi = lim["low"] * mu_ref, lim["high"] * mu_ref
    with np.errstate(invalid="ignore"):
        frac = float(np.mean(~((g >= lo) & (g <= hi)))) if g.size else 1.0
    measured = (
        f"G' outside [{lo:.3g}, {hi:.3g}] Pa ({lim['low']:.0%} - {lim['high']:g}x mu_ref "
        f"{mu_ref:.3g} Pa) or not finite on {frac:.0%} of the mask (median G' {median:.3g} Pa)"
    )
    advice = (
        "the modulus sits at a bound: the wave network may be fitting noise; try a lower "
        f"sigma_factor_u=, a higher pde_weight=, or mu_ref= near the expected modulus; {_UNITS}"
    )
    return frac, lim["at_bound"], frac <= lim["at_bound"], measured, advice


def _ahi_check(median: float, estimate: float | None):
    if estimate is None:
        return "skipped: no AHI estimate of the data's modulus"
    factor = QUALITY_LIMITS["ahi"]
    ratio = median / float(estimate)
    measured = (
        f"median G' {median:.3g} Pa is {ratio:.3g}x the data's AHI estimate {estimate:.3g} Pa"
    )
    advice = (
        f"compare with the classical baseline (hp.baseline); try more steps= or another "
        f"pde=; {_UNITS}"
    )
    return ratio, [1 / factor, factor], 1 / factor <= ratio <= factor, measured, advice


def _law_check(
    spread: float | None,
    limit: float,
    asked: str | None,
    tried: tuple[str, ...] = (),
    sliced: bool = False,
):
    if spread is None or not math.isfinite(spread):
        return "skipped: no viscoelastic law fitted (one frequency or per-frequency moduli)"
    measured = (
        f"the per-frequency moduli that best fit the fitted wave differ from the law's by up "
        f"to {spread:.2%} between frequencies (limit {limit:.2%} at this noise and this "
        "fit's PDE residual)"
    )
    if sliced:  # the equation, not the law, is what fails there
        advice = (
            "a 2-D slice of 3-D motion (slice_motion): the fitted equation takes the "
            "through-plane derivatives as zero, so no law need describe the fitted wave's "
            "dispersion; fit the volume (all slices, 3-D) where there is one, and read G'' "
            "with care"
        )
        return spread, limit, spread <= limit, measured, advice
    if asked == "auto" or len(tried) > 1:  # the laws were judged, this one kept
        laws = f" ({', '.join(tried)})" if tried else ""
        return (
            spread,
            limit,
            spread <= limit,
            measured,
            (
                f"neither law tried{laws} describes the data's dispersion: fit with "
                "mu_model='per-frequency' (one modulus per frequency) or 'springpot-dashpot' (both "
                "laws in one), check the frequencies against the data's components (convert's "
                "axes=), and read G'' with care"
            ),
        )
    if asked in ("springpot", "voigt"):
        todo = "mu_model='auto' (the law chosen by the data) or the other law"
    else:  # not known, or the springpot-dashpot itself: never advise a setting in use
        todo = "mu_model='per-frequency' (no law)"
    advice = f"the law does not describe the data's dispersion: try {todo}, and read G'' with care"
    return spread, limit, spread <= limit, measured, advice


def law_limit(spread_max: float, noise_fraction, final_pde, small_fit: bool = False) -> float:
    """The ``law_consistency`` limit of a fit (:func:`helmholtz_pinn.assess.laws.
    consistency_limit`): its form's ``spread_max`` (times :data:`SMALL_FIT_SPREAD` for the
    small fit), the best field's noise fraction among ``noise_fraction`` (the run facts'
    per field list) and the worst of ``final_pde`` (a number or a batch's list)."""
    spread = spread_max * (SMALL_FIT_SPREAD if small_fit else 1.0)
    return consistency_limit(spread, _best_noise(noise_fraction), _worst(final_pde))


def _worst(values) -> float | None:
    """The largest finite value of a number or a batch's list (None: none)."""
    v = np.asarray([] if values is None else values, float).reshape(-1)
    v = v[np.isfinite(v)]
    return float(v.max()) if v.size else None


def _best_noise(noise_fraction) -> float | None:
    """The smallest finite noise fraction over the fields (None entries ignored), or None."""
    if noise_fraction is None:
        return None
    n = np.asarray(noise_fraction, float)  # None -> NaN
    n = n[np.isfinite(n)]
    return float(n.min()) if n.size else None


def _median_modulus(mu: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Median |mu| over the mask per frequency, Pa, shape (F,) (NaN where none is finite)."""
    m = np.abs(per_frequency(mu, np.shape(mask), "mu")[:, np.asarray(mask, bool)])
    return np.array([np.median(r[np.isfinite(r)]) if np.isfinite(r).any() else np.nan for r in m])


def _resolution_check(
    mu, mask, frequency, spacing, rho: float, noise: float | None, components: int | None = None
):
    if frequency is None or spacing is None:
        return "skipped: no frequency and spacing of the data"
    f = np.asarray(frequency, float).reshape(-1)
    modulus = _median_modulus(mu, mask)
    if modulus.size == 1:
        modulus = np.repeat(modulus, f.size)
    voxel = float(np.mean(np.asarray(spacing, float).reshape(-1)[:2]))
    with np.errstate(invalid="ignore"):
        voxels = np.sqrt(modulus / rho) / f / voxel
    if not np.isfinite(voxels).any():
        return "skipped: no finite modulus in the mask"
    lim, value = QUALITY_LIMITS, float(np.nanmin(voxels))
    noisy = noise is not None and noise >= lim["clean"]
    slice_2d = np.ndim(mask) == 2
    single = components == 1
    passed = value >= lim["voxels"] or not (noisy or slice_2d or single)
    why = (
        "noisy data" if noisy else "a 2-D fit" if slice_2d else "one component" if single
        else "clean volume"
    )  # fmt: skip
    measured = (
        f"the fitted modulus has {value:.3g} voxels per shortest shear wavelength ({why}; "
        f"fails below {lim['voxels']:g} on noisy data, 2-D fits or one component)"
    )
    advice = (
        "coarse sampling meeting noise, a slice or a single component: maps there were "
        "17-36 % off with no other check firing; compare with the classical maps "
        "(hp.curl_mdev, hp.baseline); "
        "fit the volume where there is one; in the acquisition, smaller voxels or a lower "
        "frequency give more voxels per wavelength"
    )
    return value, lim["voxels"], bool(passed), measured, advice


def _wave_check(mu, mask, frequency, rho: float, wavelength_m):
    if frequency is None or wavelength_m is None:
        return "skipped: no wavelength estimated from u (wavelength_m)"
    f = np.asarray(frequency, float).reshape(-1)
    lam = np.asarray(wavelength_m, float).reshape(-1)
    modulus = _median_modulus(mu, mask)
    implied = rho * (f * lam) ** 2  # Pa: |mu| = rho (f lambda)^2
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = modulus / implied if modulus.size == implied.size else modulus[0] / implied
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    if not ratio.size:
        return "skipped: no finite modulus or wavelength"
    factor = QUALITY_LIMITS["wave"]
    worst = float(ratio[np.argmax(np.abs(np.log(ratio)))])
    measured = (
        f"the map's median |mu| is {worst:.3g}x the modulus rho (f lambda)^2 that the data's "
        "own wavelength implies (the frequency farthest from 1)"
    )
    advice = (
        "the whole map is off (e.g. towards 0 where the wave has died out, or fitted noise): "
        "compare with the classical maps (hp.curl_mdev, hp.baseline); try another seed= or "
        "ensemble=2 and check the data's amplitude far from the drivers"
    )
    return worst, [1 / factor, factor], 1 / factor <= worst <= factor, measured, advice


def _slice_check(share: float | None):
    if share is None or not math.isfinite(share):
        return "skipped: not a 2-D fit of three components"
    limit = QUALITY_LIMITS["through_plane"]
    measured = f"the through-plane component carries {share:.1%} of the field's power"
    advice = (
        "a 2-D slice of 3-D motion: the fit takes the through-plane derivatives as zero and "
        "the map can be far off (an organ slice: 17 %) with every other check passing; "
        "fit the volume (all slices, 3-D) where there is one"
    )
    return share, limit, share <= limit, measured, advice


def slice_of_3d_motion(share: float | None) -> bool:
    """Whether a through-plane share (:func:`through_plane_share`) fails ``slice_motion``:
    a 2-D fit of three components of truly 3-D motion."""
    return share is not None and math.isfinite(share) and share > QUALITY_LIMITS["through_plane"]


def _component_check(components: int | None):
    if components is None:
        return "skipped: the number of components is not known"
    measured = f"{components} displacement component{'s' if components > 1 else ''}"
    advice = (
        "one component of elastic motion is not a Helmholtz field (it carries a compressional "
        "part the scalar equation lacks): one through-plane component of elastic organs "
        "gave maps 22-77 % off, smoothed AHI as far or further, whatever the noise; read the "
        "map as a rough level, and fit all three components where the scanner measured them"
    )
    return components, 2, components >= 2, measured, advice


def _slice_axis_check(
    share: float | None, slices: int | None, components: int | None, noise: float | None
):
    if share is None or not math.isfinite(share):
        return "skipped: not a volume of at least 3 slices"
    lim = QUALITY_LIMITS
    elastic = components == 3 and noise is not None and noise < lim["loud"]
    limit = lim["slice_axis_3c"] if elastic else lim["slice_axis"]
    measured = (
        f"{share:.0%} of the wave's curvature runs along the slice axis "
        f"(|k_z|^2 / |k|^2 estimated from u, {slices} slices; fails from {limit:g}"
        + (f" for three components below a noise fraction of {lim['loud']:g})" if elastic else ")")
    )
    advice = (
        "the wave runs through the stack of slices, which the fitted networks follow "
        "poorly (their slice axis is smoothed, sigma_ratio_z): organs driven that way were "
        "12-41 % off with no other check firing; compare with the classical maps "
        "(hp.curl_mdev for three components, hp.baseline) and a fit with --sigma-ratio-z 1 "
        "(isotropic)"
    )
    return share, limit, share < limit, measured, advice


def resimulation_facts(dataset, mu: np.ndarray) -> dict | None:
    """What the ``resimulation`` check of :func:`fit_quality` reads, per frequency (plain
    lists): ``misfit``, the re-simulation misfit of ``mu`` (Pa, ``grid`` or ``(F, *grid)``;
    :func:`helmholtz_pinn.assess.resimulation.misfit`); the classical map's ``baseline``
    and ``baseline_misfit`` (:func:`baseline_resimulation`); ``noise``, the misfit noise
    alone gives, sqrt(sum_c n_c^2 / sum_c s_c^2) (n_c, s_c the noise and field RMS of
    component c). None where no classical map can be made."""
    base = baseline_resimulation(dataset)
    if base is None:
        return None
    noise2 = np.sum(stencils.field_noise(dataset) ** 2, axis=1)
    power = np.sum(stencils.field_rms(dataset) ** 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        noise = np.sqrt(noise2 / power)
    return dict(misfit=_plain(resimulation.misfit(mu, dataset)), **base, noise=_plain(noise))


@stencils.once_per_dataset
def baseline_resimulation(dataset) -> dict | None:
    """The classical map that the ``resimulation`` check compares with, once per dataset
    (it does not depend on the fit, so a fit on a GPU computes it in the background while
    it trains: :func:`helmholtz_pinn.fit.inversion.invert`): ``baseline``, "curl-MDEV" for
    three components on a 3-D grid where it gives a map, else "AHI" (Gaussian-smoothed),
    both per frequency with their default widths; ``baseline_misfit``, its map's
    re-simulation misfit per frequency. None where no classical map can be made."""
    mu_base, name = None, "curl-MDEV"
    if dataset.n_comp == 3 and dataset.ndim == 3:
        try:
            mu_base = baselines.default_map(dataset, "curl_mdev")
        except InputError:  # a mask too thin for the curl's stencils
            mu_base = None
    if mu_base is None or not np.isfinite(mu_base).any():
        name = "AHI"
        try:
            mu_base = baselines.default_map(dataset, "ahi")
        except InputError:
            return None
    return dict(baseline=name, baseline_misfit=_plain(resimulation.misfit(mu_base, dataset)))


def _plain(a) -> list:
    return [None if not np.isfinite(x) else round(float(x), 5) for x in a]


def _resimulation_check(facts: dict | None):
    if not facts:
        return "skipped: no re-simulation of the map (resimulation_facts)"
    m, b, n = (np.asarray(facts[k], float) for k in ("misfit", "baseline_misfit", "noise"))
    lim = QUALITY_LIMITS
    ref = np.fmax(np.fmax(b, np.nan_to_num(n)), lim["resim_floor"])  # NaN: no baseline
    ok = np.isfinite(m) & np.isfinite(b)
    if not ok.any():
        return "skipped: no interior voxel to re-simulate, or no classical map there"
    name = facts["baseline"]
    limit = lim["resim_curl" if name == "curl-MDEV" else "resim_ahi"]
    value = float(np.sqrt(np.sum(m[ok] ** 2) / np.sum(ref[ok] ** 2)))
    rms = [float(np.sqrt(np.mean(a[ok] ** 2))) for a in (m, b, np.nan_to_num(n))]
    measured = (
        f"the wave the map predicts (scalar Helmholtz with the data on the mask's rim) misses "
        f"the measured one by {rms[0]:.0%}, the {name} map's by {rms[1]:.0%} and the noise "
        f"alone would by {rms[2]:.0%}: {value:.3g}x the larger of those and "
        f"{lim['resim_floor']:.0%} (limit {limit:g}x)"
    )
    advice = (
        f"the map reproduces the data clearly worse than the classical {name} map, so it is "
        "likely far off (too soft overall, or fallen towards 0 where the wave is weak): do "
        "not read it quantitatively; compare with the classical maps (hp.curl_mdev, "
        "hp.baseline) and try another seed= or ensemble=2"
    )
    return value, limit, value <= limit, measured, advice


def data_facts(dataset) -> dict:
    """The data's facts that :func:`fit_quality` reads beside the fit, as keyword
    arguments (plain Python values): ``frequency`` (Hz), ``spacing`` (m), ``rho``,
    ``wavelength_m`` (per frequency, :func:`helmholtz_pinn.assess.wavelength.estimate`;
    None where it cannot be estimated), ``through_plane_share`` (a 2-D dataset of
    three components: the third component's share of the field power in the mask, the
    highest over the frequencies; else None), ``slice_axis_share`` and ``slices`` (a
    volume: the share of the wave's ``|k|^2`` along the slice axis at the shortest
    wavelength, :attr:`~helmholtz_pinn.assess.wavelength.Wavelength.through_plane`, and
    the slices; else None) and ``components`` (C)."""
    axis = None
    try:
        estimate = wavelength.estimate_dataset(dataset)
        lam = [None if not np.isfinite(x) else float(x) for x in estimate.metres]
        if dataset.ndim == 3 and math.isfinite(estimate.through_plane_at_shortest):
            axis = estimate.through_plane_at_shortest
    except InputError:
        lam = None
    return dict(
        frequency=np.asarray(dataset.frequency, float).tolist(),
        spacing=np.asarray(dataset.spacing, float).tolist(),
        rho=float(dataset.rho),
        wavelength_m=lam,
        through_plane_share=through_plane_share(dataset),
        slice_axis_share=axis,
        slices=int(dataset.grid[2]) if dataset.ndim == 3 else None,
        components=int(dataset.n_comp),
    )


def through_plane_share(dataset) -> float | None:
    """A 2-D dataset of three components: the third (through-plane) component's share of
    the field power in the mask, the highest over the frequencies; None otherwise."""
    if dataset.ndim != 2 or dataset.n_comp != 3:
        return None
    u = dataset.u[:, :, np.asarray(dataset.mask, bool)]
    power = np.sum(np.abs(u) ** 2, axis=-1)  # (F, C)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.nanmax(power[:, 2] / power.sum(axis=1)))


def _pde_check(final_pde: float | None):
    if final_pde is None:
        return "skipped: no final PDE loss"
    pde, limit = float(np.max(final_pde)), QUALITY_LIMITS["pde"]  # worst member of a batch
    measured = f"final PDE loss {pde:.3g} (mean |r|^2 per unit field power)"
    advice = (
        "the fitted field does not obey the PDE: try more steps=, a higher pde_weight= or "
        "larger networks (width=, n_features=)"
    )
    return pde, limit, pde <= limit, measured, advice


def _noise_power(noise_fraction, field_weight) -> float:
    """The field_weight-weighted mean of noise_fraction^2 (None entries ignored; 0 without
    an estimate): the data loss of the noise-free field, per unit field power."""
    if noise_fraction is None:
        return 0.0
    n2 = np.square(np.asarray(noise_fraction, float))  # None -> NaN
    w = np.ones_like(n2) if field_weight is None else np.asarray(field_weight, float)
    ok = np.isfinite(n2) & np.isfinite(w) if w.shape == n2.shape else np.zeros(n2.shape, bool)
    return float(np.sum(w[ok] * n2[ok]) / np.sum(w[ok])) if np.sum(w[ok]) > 0 else 0.0


def _noise_check(final_data: float | None, floor: float | None):
    if floor is None:
        return "skipped: no noise estimate (noise_fraction) in the run facts"
    if final_data is None or not floor > 0:
        return "skipped: " + ("no final data loss" if final_data is None else "no noise estimated")
    final_data = float(np.min(final_data))  # the member closest to fitting noise
    misfit, limit = final_data / floor, QUALITY_LIMITS["noise"]
    measured = f"data misfit {final_data:.3g} is {misfit:.3g}x the noise power {floor:.3g}"
    advice = (
        "the network reproduces the noise: try a lower sigma_factor_u=, fewer steps= or a "
        "higher pde_weight="
    )
    return misfit, limit, misfit >= limit, measured, advice


def _fit_check(final_data, floor: float, members: int):
    if final_data is None:
        return "skipped: no final data loss"
    values = np.asarray(final_data, float).reshape(-1)
    best = np.min(values.reshape(-1, members if values.size % members == 0 else 1), axis=1)
    excess, limit = float(np.max(best)) - floor, QUALITY_LIMITS["fit"]
    measured = (
        f"data misfit {float(np.max(best)):.3g} minus the noise power {floor:.3g} is "
        f"{excess:.3g} (an RMS of {np.sqrt(max(excess, 0.0)):.1%} of the field)"
    )
    advice = (
        "the networks did not reproduce the data (a poorer optimum, or a PDE form that does "
        "not describe them): try another seed= or ensemble=3 (members in a poorer "
        "optimum are left out), more steps=, or another pde="
    )
    return excess, limit, excess <= limit, measured, advice


def _loss_check(history: list[dict] | None, floor: float = 0.0):
    """(L_last - floor) / (L_first - floor), the worst member; the floor is the noise power
    (the data loss of a fit that leaves exactly the noise), at most half the first loss."""
    if not history:
        return "skipped: no training history"
    end = history[-1]
    last = np.asarray(end["last_loss"] if "last_loss" in end else end["loss"], float)
    first = np.asarray(history[0]["loss"], float)
    floor = min(floor, float(np.min(first)) / 2)
    ratio = float(np.max((last - floor) / (first - floor)))
    above = f" above the noise power {floor:.3g}" if floor > 0 else ""
    measured = f"the final loss{above} is {ratio:.3g}x the first block's mean loss"
    advice = (
        "the loss never left its start: try another learning_rate= or more steps=, and "
        "check that u is non-zero inside the mask"
    )
    return ratio, QUALITY_LIMITS["loss"], ratio <= QUALITY_LIMITS["loss"], measured, advice


def _seed_check(mu: np.ndarray, mu_std: np.ndarray | None, mask: np.ndarray):
    if mu_std is None:
        return "skipped: one seed (ensemble=2 or more measures it)"
    shape, inside = np.shape(mask), np.asarray(mask, bool)
    g = per_frequency(mu, shape, "mu").real[:, inside]
    spread = per_frequency(mu_std, shape, "mu_std").real[:, inside]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(np.nanmedian(np.abs(spread) / np.abs(g))) if g.size else math.nan
    limit = QUALITY_LIMITS["seeds"]
    measured = f"the seeds' G' differ by {value:.3g} of G' (median over the mask)"
    advice = (
        "the map depends on the initialisation: trust the ensemble mean (mu.npz) only "
        "where mu_std is small; try more steps=, a higher pde_weight= or a larger ensemble="
    )
    return value, limit, bool(value <= limit), measured, advice
