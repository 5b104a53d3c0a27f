"""Accuracy metrics for a recovered shear modulus, shared by the PINN and the baseline,
and the plausibility checks of a fit (:func:`fit_quality`). All functions are plain numpy.
The modulus ``mu = G' + i G''`` is complex, in Pa; the headline metrics use the storage
modulus ``G' = Re(mu)`` and the magnitude ``|mu|``. Relative errors are fractions
(0.05 = 5 %), taken only inside the dataset's mask.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from .data import Dataset

__all__ = [
    "QUALITY_CHECKS",
    "QUALITY_LIMITS",
    "FitQualityWarning",
    "contrast_transfer",
    "evaluate",
    "fit_quality",
    "pearson_r",
    "region_medians",
    "relative_error_map",
]


def relative_error_map(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Elementwise relative error ``|pred - true| / |true|`` (a fraction).

    Used on the storage modulus (``Re(mu)``) and on ``|mu|``. Voxels where ``true``
    is 0 give ``inf`` (or ``nan`` where ``pred`` is 0 too).
    """
    pred = np.asarray(pred)
    true = np.asarray(true)
    if pred.shape != true.shape:
        raise InputError(
            f"pred and true must have the same shape; got {pred.shape} and {true.shape}"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(pred - true) / np.abs(true)


def pearson_r(pred: np.ndarray, true: np.ndarray, mask: np.ndarray) -> float:
    """Pearson correlation coefficient of two real maps over the voxels where ``mask``.

    Returns ``nan`` when either map is constant inside the mask or the mask holds fewer
    than two voxels.
    """
    p, t, m = _check_maps(pred, true, mask)
    x = np.asarray(p[m], dtype=float)
    y = np.asarray(t[m], dtype=float)
    if x.size < 2:
        return math.nan
    x = x - x.mean()
    y = y - y.mean()
    denom = math.sqrt(float(np.sum(x * x)) * float(np.sum(y * y)))
    if denom == 0.0:
        return math.nan
    return float(np.sum(x * y) / denom)


def region_medians(values: np.ndarray, regions: np.ndarray, mask: np.ndarray) -> dict[int, float]:
    """Median of ``values`` in each labelled region, inside the mask.

    Args:
      values: real map, shape ``grid``.
      regions: integer labels, shape ``grid`` (1 = background, 2.. = targets; labels
        below 1 are ignored).
      mask: bool, shape ``grid``.

    Returns:
      ``{label: median}`` for every label >= 1 with at least one voxel in the mask,
      in the units of ``values``.
    """
    v, r, m = _check_maps(values, regions, mask)
    out: dict[int, float] = {}
    for label in np.unique(r[m]):
        label = int(label)
        if label < 1:
            continue
        out[label] = float(np.median(v[m & (r == label)]))
    return out


def contrast_transfer(
    pred: np.ndarray, true: np.ndarray, regions: np.ndarray, mask: np.ndarray
) -> dict[int, float]:
    """Fraction of each target's true contrast against the background that is recovered.

    For each target region ``t >= 2``:
    ``(median(pred in t) - median(pred in 1)) / (median(true in t) - median(true in 1))``,
    medians taken inside the mask. 1.0 is a perfect contrast, 0.0 a flat map; ``nan``
    where the true contrast is 0. Needs background voxels (label 1) inside the mask.
    """
    _check_maps(pred, true, mask)
    mp = region_medians(pred, regions, mask)
    mt = region_medians(true, regions, mask)
    if 1 not in mt:
        raise InputError(
            "contrast_transfer needs background voxels (region label 1) inside the mask"
        )
    out: dict[int, float] = {}
    for label in sorted(k for k in mt if k >= 2):
        true_contrast = mt[label] - mt[1]
        pred_contrast = mp[label] - mp[1]
        out[label] = math.nan if true_contrast == 0 else float(pred_contrast / true_contrast)
    return out


def evaluate(mu_pred: np.ndarray, dataset: Dataset) -> dict[str, Any]:
    """Accuracy of a recovered complex modulus against the dataset's ground truth.

    Args:
      mu_pred: complex modulus in Pa, shape ``grid`` or ``(F, *grid)``.
      dataset: a :class:`~helmholtz_pinn.data.Dataset`; its ``mu`` (Pa, ``grid`` or
        ``(F, *grid)``), ``mask`` and ``regions`` are used.

    Returns:
      ``{}`` when the dataset has no ground truth. Otherwise a JSON-serialisable dict
      (string keys, plain floats; undefined values such as R of a constant map are
      ``None``):

      - ``median_rel_error_storage``, ``mean_rel_error_storage``: median / mean over
        the mask of ``|Re mu_pred - Re mu_true| / |Re mu_true|`` (fractions);
      - ``median_rel_error_abs``, ``mean_rel_error_abs``: the same for ``|mu|``;
      - ``median_rel_error_loss``: the median for G'' = Im mu, relative to the true G'';
      - ``pearson_r_storage``: Pearson R of ``Re(mu)`` over the mask;
      - when the dataset has regions, ``regions`` =
        ``{"1": {"median_storage_pa", "true_median_storage_pa",
        "median_rel_error_storage"}, "2": ...}`` (storage medians in Pa, error a
        fraction), and ``contrast_transfer`` = ``{"2": ..., ...}`` on ``Re(mu)``
        (1.0 = perfect, 0.0 = flat; see :func:`contrast_transfer`).

      When the prediction or the truth is per-frequency (``(F, *grid)``), each
      frequency is compared on its own (a single map is compared with every
      frequency); the top-level metrics are those of the first frequency and
      ``per_frequency`` is a list, in the dataset's frequency order, of dicts with
      ``frequency_hz`` and the same keys as above.
    """
    if dataset.mu is None:
        return {}
    grid = tuple(dataset.grid)
    pred = _per_freq(mu_pred, grid, "mu_pred")
    true = _per_freq(dataset.mu, grid, "dataset.mu")
    mask = _dataset_mask(dataset)
    if len(pred) > 1 and len(true) > 1 and len(pred) != len(true):
        raise InputError(
            f"mu_pred has {len(pred)} frequencies but the ground truth has {len(true)}; "
            f"expected shape {grid} or ({len(true)}, *{grid})"
        )
    n = max(len(pred), len(true))
    if n > 1 and n != dataset.n_freq:
        raise InputError(
            f"per-frequency modulus has {n} frequencies but the dataset has {dataset.n_freq}"
        )
    results = [
        _evaluate_one(pred[min(i, len(pred) - 1)], true[min(i, len(true) - 1)], dataset, mask)
        for i in range(n)
    ]
    out = dict(results[0])
    if n > 1:
        freqs = np.asarray(dataset.frequency, dtype=float)
        out["per_frequency"] = [
            {"frequency_hz": float(freqs[i]), **res} for i, res in enumerate(results)
        ]
    return out


class FitQualityWarning(UserWarning):
    """A finished fit failed a plausibility check of :func:`fit_quality`."""


QUALITY_CHECKS = (
    "modulus_range",
    "ahi_agreement",
    "pde_residual",
    "data_vs_noise",
    "loss_decrease",
)
# Limits of the checks (fractions and factors; see fit_quality).
QUALITY_LIMITS = dict(low=0.02, high=50.0, at_bound=0.5, ahi=2.0, pde=0.3, noise=0.25, loss=0.5)
_UNITS = "check the data's spacing (m) and frequency (Hz)"


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
    checks: tuple[str, ...] = QUALITY_CHECKS,
) -> list[dict[str, Any]]:
    """Plausibility checks of a finished fit, to catch failures that still give a map.

    Args:
      mu: complex modulus, Pa, ``grid`` or ``(F, *grid)``; mask: bool ``grid``.
      mu_ref: the reference modulus of the run, Pa. ahi_estimate: the data's AHI
        estimate (:func:`helmholtz_pinn.baselines.estimate_modulus`), Pa.
      final_data, final_pde: nondimensional losses of the last step: the data misfit
        and the mean ``|r|^2``, both per unit field power (a PDE loss of 1 is a residual
        as large as the field, as with ``mu = 0``).
      noise_fraction, field_weight: estimated noise RMS / field RMS and the data loss's
        weight per (F, C), nested lists (None entries are ignored; weights default to 1).
      history: the host loop's per-block records (``loss``, ``last_loss``; lists per
        member in batched runs: the worst member is checked).
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
    - ``loss_decrease``: the last step's loss / the first block's mean loss; fails above 0.5.
    """
    unknown = set(checks) - set(QUALITY_CHECKS)
    if unknown:
        raise InputError(f"unknown checks {sorted(unknown)}; valid: {QUALITY_CHECKS}")
    g = _per_freq(mu, np.shape(mask), "mu").real[:, np.asarray(mask, bool)]
    median = float(np.nanmedian(g)) if np.isfinite(g).any() else math.nan
    found = {
        "modulus_range": _range_check(g, median, mu_ref),
        "ahi_agreement": _ahi_check(median, ahi_estimate),
        "pde_residual": _pde_check(final_pde),
        "data_vs_noise": _noise_check(final_data, noise_fraction, field_weight),
        "loss_decrease": _loss_check(history),
    }
    out = []
    for name in checks:
        check = found[name]
        if isinstance(check, str):  # the reason it was skipped
            check = (None, None, True, check, "")
        value, threshold, passed, measured, advice = check
        entry = dict(name=name, passed=bool(passed), skipped=value is None, value=value)
        message = measured if passed else f"{measured}; {advice}"
        out.append({**entry, "threshold": threshold, "message": message})
    return out


def _range_check(g: np.ndarray, median: float, mu_ref: float | None):
    if mu_ref is None:
        return "skipped: no reference modulus"
    lim = QUALITY_LIMITS
    lo, hi = lim["low"] * mu_ref, lim["high"] * mu_ref
    with np.errstate(invalid="ignore"):
        frac = float(np.mean(~((g >= lo) & (g <= hi)))) if g.size else 1.0
    measured = (
        f"G' outside [{lo:.3g}, {hi:.3g}] Pa ({lim['low']:.0%} - {lim['high']:g}x mu_ref "
        f"{mu_ref:.3g} Pa) or not finite on {frac:.0%} of the mask (median G' {median:.3g} Pa)"
    )
    advice = (
        "the modulus sits at a bound: the wave network may be fitting noise; try a lower "
        f"--sigma-factor-u, a higher --pde-weight, or --mu-ref near the expected modulus; {_UNITS}"
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
    advice = f"compare with `helmholtz-pinn baseline`; try more --steps or another --pde; {_UNITS}"
    return ratio, [1 / factor, factor], 1 / factor <= ratio <= factor, measured, advice


def _pde_check(final_pde: float | None):
    if final_pde is None:
        return "skipped: no final PDE loss"
    pde, limit = float(np.max(final_pde)), QUALITY_LIMITS["pde"]  # worst member of a batch
    measured = f"final PDE loss {pde:.3g} (mean |r|^2 per unit field power)"
    advice = (
        "the fitted field does not obey the PDE: try more --steps, a higher --pde-weight or "
        "larger networks (--width, --n-features)"
    )
    return pde, limit, pde <= limit, measured, advice


def _noise_check(final_data: float | None, noise_fraction, field_weight):
    if noise_fraction is None:
        return "skipped: no noise estimate (noise_fraction) in the run facts"
    n2 = np.square(np.asarray(noise_fraction, float))  # None -> NaN
    w = np.ones_like(n2) if field_weight is None else np.asarray(field_weight, float)
    ok = np.isfinite(n2) & np.isfinite(w) if w.shape == n2.shape else np.zeros(n2.shape, bool)
    floor = float(np.sum(w[ok] * n2[ok]) / np.sum(w[ok])) if np.sum(w[ok]) > 0 else 0.0
    if final_data is None or not floor > 0:
        return "skipped: " + ("no final data loss" if final_data is None else "no noise estimated")
    final_data = float(np.min(final_data))  # the member closest to fitting noise
    misfit, limit = final_data / floor, QUALITY_LIMITS["noise"]
    measured = f"data misfit {final_data:.3g} is {misfit:.3g}x the noise power {floor:.3g}"
    advice = (
        "the network reproduces the noise: try a lower --sigma-factor-u, fewer --steps or a "
        "higher --pde-weight"
    )
    return misfit, limit, misfit >= limit, measured, advice


def _loss_check(history: list[dict] | None):
    if not history:
        return "skipped: no training history"
    end = history[-1]
    last = np.asarray(end["last_loss"] if "last_loss" in end else end["loss"], float)
    ratio = float(np.max(last / np.asarray(history[0]["loss"], float)))
    measured = f"the final loss is {ratio:.3g}x the first block's mean loss"
    advice = (
        "the loss never left its start: try another --learning-rate or more --steps, and "
        "check that u is non-zero inside the mask"
    )
    return ratio, QUALITY_LIMITS["loss"], ratio <= QUALITY_LIMITS["loss"], measured, advice


# --- helpers -------------------------------------------------------------------------


def _check_maps(a, b, mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(a)
    b = np.asarray(b)
    m = np.asarray(mask)
    if m.dtype != bool:
        raise InputError(f"mask must be bool; got {m.dtype}")
    if not (a.shape == b.shape == m.shape):
        raise InputError(
            f"maps and mask must have the same shape; got {a.shape}, {b.shape} and mask {m.shape}"
        )
    return a, b, m


def _dataset_mask(dataset: Dataset) -> np.ndarray:
    return np.ones(dataset.grid, bool) if dataset.mask is None else np.asarray(dataset.mask, bool)


def _per_freq(mu: np.ndarray, grid: tuple[int, ...], name: str) -> np.ndarray:
    """View a modulus of shape ``grid`` or ``(F, *grid)`` as ``(F', *grid)``."""
    mu = np.asarray(mu)
    if mu.shape == grid:
        return mu[None]
    if mu.ndim == len(grid) + 1 and mu.shape[1:] == grid and mu.shape[0] >= 1:
        return mu
    raise InputError(f"{name} must have shape {grid} or (F, *{grid}); got {mu.shape}")


def finite_or_none(x: float) -> float | None:  # JSON has no NaN or inf
    return float(x) if math.isfinite(float(x)) else None


def _evaluate_one(pred: np.ndarray, true: np.ndarray, dataset: Dataset, mask: np.ndarray) -> dict:
    pred = np.asarray(pred, dtype=complex)
    true = np.asarray(true, dtype=complex)
    if not mask.any():
        raise InputError("the dataset mask selects no voxels")
    err_storage = relative_error_map(pred.real, true.real)
    err_abs = relative_error_map(np.abs(pred), np.abs(true))
    err_loss = relative_error_map(pred.imag, true.imag)
    out: dict[str, Any] = {
        "median_rel_error_storage": finite_or_none(np.median(err_storage[mask])),
        "mean_rel_error_storage": finite_or_none(np.mean(err_storage[mask])),
        "median_rel_error_abs": finite_or_none(np.median(err_abs[mask])),
        "mean_rel_error_abs": finite_or_none(np.mean(err_abs[mask])),
        "median_rel_error_loss": finite_or_none(np.median(err_loss[mask])),
        "pearson_r_storage": finite_or_none(pearson_r(pred.real, true.real, mask)),
    }
    if dataset.regions is not None:
        regions = np.asarray(dataset.regions)
        med_pred = region_medians(pred.real, regions, mask)
        med_true = region_medians(true.real, regions, mask)
        med_err = region_medians(err_storage, regions, mask)
        out["regions"] = {
            str(label): {
                "median_storage_pa": finite_or_none(med_pred[label]),
                "true_median_storage_pa": finite_or_none(med_true[label]),
                "median_rel_error_storage": finite_or_none(med_err[label]),
            }
            for label in sorted(med_true)
        }
        if 1 in med_true:
            out["contrast_transfer"] = {
                str(label): finite_or_none(c)
                for label, c in contrast_transfer(pred.real, true.real, regions, mask).items()
            }
    return out
