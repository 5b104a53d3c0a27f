"""Accuracy metrics for a recovered shear modulus, shared by the PINN and the baseline.
All functions are plain numpy. The modulus ``mu = G' + i G''`` is complex, in Pa; the
headline metrics use the storage modulus ``G' = Re(mu)`` and the magnitude ``|mu|``.
Relative errors are fractions (0.05 = 5 %), taken only inside the dataset's mask, or
inside its interior (:func:`interior_mask`) when a rim of ``margin`` voxels is left out.
The plausibility checks of a finished fit are :mod:`helmholtz_pinn.assess.fit_checks`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from helmholtz_pinn.io.dataset import Dataset

__all__ = [
    "contrast_transfer",
    "evaluate",
    "interior_mask",
    "pearson_r",
    "region_medians",
    "relative_error_map",
    "shown_contrasts",
    "wave_misfit",
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


def wave_misfit(u_fit: np.ndarray, u: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Local misfit of a fitted wave field, ``(F, *grid)``, a fraction:
        m_f(x) = sqrt(sum_c |u_fit - u|^2) / sqrt(mean over the mask of sum_c |u|^2),
    per frequency f (components together); NaN outside the mask. ``u_fit`` and ``u`` are
    ``(F, C, *grid)`` in one unit. Noise of RMS n times each component's RMS (the run
    facts' ``noise_fraction``) left unfitted gives about n; a systematic misfit (a field
    the networks could not follow, e.g. at a stiff target's edge) stands out above it."""
    u_fit, u, mask = np.asarray(u_fit), np.asarray(u), np.asarray(mask, bool)
    if u_fit.shape != u.shape or u.shape[2:] != mask.shape:
        raise InputError(
            f"u_fit {u_fit.shape} and u {u.shape} must both be (F, C, *grid) with grid the "
            f"mask's {mask.shape}"
        )
    s = _power_of_two(
        u
    )  # squared in the unit s: u x 1e20 or 1e-30 neither overflows nor underflows
    power = np.sum((np.abs(u) / s) ** 2, axis=1)[:, mask].mean(axis=1)  # (F,)
    rms = np.sqrt(np.where(power > 0, power, np.nan)).reshape((-1,) + (1,) * mask.ndim)
    misfit = np.sqrt(np.sum((np.abs(u_fit - u) / s) ** 2, axis=1))
    return np.where(mask, misfit / rms, np.nan)


def _power_of_two(u: np.ndarray) -> float:
    """The power of two nearest the largest finite amplitude of ``u`` (1 for none):
    dividing by it is exact and brings the values near 1."""
    amplitude = np.abs(u)
    peak = float(np.max(amplitude, initial=0.0, where=np.isfinite(amplitude)))
    return 2.0 ** round(math.log2(peak)) if peak > 0 else 1.0


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


# a target whose true value differs from the background's by less than this fraction of
# the background has no contrast to recover: the ratio would be noise over a near-zero
# difference (a viscosity-only target's G'; its G'' contrast is read instead)
MIN_CONTRAST = 0.1


def contrast_transfer(
    pred: np.ndarray,
    true: np.ndarray,
    regions: np.ndarray,
    mask: np.ndarray,
    min_contrast: float = MIN_CONTRAST,
) -> dict[int, float]:
    """Fraction of each target's true contrast against the background that is recovered.

    For each target region ``t >= 2``:
    ``(median(pred in t) - median(pred in 1)) / (median(true in t) - median(true in 1))``,
    medians taken inside the mask. 1.0 is a perfect contrast, 0.0 a flat map; ``nan``
    where the true contrast is at most ``min_contrast`` times the background's true median
    (in magnitude; 0 included). Needs background voxels (label 1) inside the mask.
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
        small = abs(true_contrast) <= min_contrast * abs(mt[1])
        out[label] = math.nan if small else float(pred_contrast / true_contrast)
    return out


def shown_contrasts(storage: dict | None, loss: dict | None) -> tuple[dict, dict]:
    """(G' contrasts, G'' contrasts) of the targets to show beside a median, from the
    ``contrast_transfer`` and ``contrast_transfer_loss`` entries of the metrics: every
    target with a G' contrast, and the G'' contrast of each target that has none (a
    viscosity-only one)."""
    shown = {k: v for k, v in (storage or {}).items() if v is not None}
    return shown, {k: v for k, v in (loss or {}).items() if v is not None and k not in shown}


def interior_mask(
    mask: np.ndarray, margin: int = 0, axes: tuple[int, ...] | None = None
) -> np.ndarray:
    """The voxels of ``mask`` that lie more than ``margin`` voxels inside it.

    A voxel is kept when every voxel within ``margin`` steps along each of ``axes``
    (default: all grid axes), diagonals included, is in the mask and on the grid: the
    binary erosion (``scipy.ndimage.binary_erosion``) by a box of ``2 margin + 1``
    voxels along ``axes`` (1 along the others), the grid's outside counting as outside
    the mask. Holes in the mask are outside too: the rim around a hole is left out like
    the outer rim. ``margin`` 0 returns the mask.

    Raises :class:`InputError` for a negative margin or one that leaves no voxel (the
    message gives the largest that leaves some).
    """
    mask = np.asarray(mask, bool)
    if not isinstance(margin, (int, np.integer)) or margin < 0:
        raise InputError(f"margin must be an integer >= 0 voxels; got {margin!r}")
    axes = tuple(range(mask.ndim)) if axes is None else tuple(axes)
    inner = _erode(mask, margin, axes)
    if not inner.any():
        usable = next((m for m in range(margin - 1, 0, -1) if _erode(mask, m, axes).any()), 0)
        raise InputError(
            f"a margin of {margin} voxels leaves no voxel of the mask "
            f"({int(mask.sum())} voxels); the largest margin that leaves some is {usable}"
        )
    return inner


def _erode(mask: np.ndarray, margin: int, axes: tuple[int, ...]) -> np.ndarray:
    if margin == 0:
        return mask
    from scipy import ndimage

    box = np.ones([2 * margin + 1 if k in axes else 1 for k in range(mask.ndim)], bool)
    return ndimage.binary_erosion(mask, structure=box, border_value=0)


def evaluate(
    mu_pred: np.ndarray, dataset: Dataset, *, margin: int = 0, axes: tuple[int, ...] | None = None
) -> dict[str, Any]:
    """Accuracy of a recovered complex modulus against the dataset's ground truth.

    Args:
      mu_pred: complex modulus in Pa, shape ``grid`` or ``(F, *grid)``.
      dataset: a :class:`~helmholtz_pinn.io.dataset.Dataset`; its ``mu`` (Pa, ``grid`` or
        ``(F, *grid)``), ``mask`` and ``regions`` are used.
      margin, axes: leave out a rim of ``margin`` voxels inside the mask, along
        ``axes`` (default all): the metrics are taken over :func:`interior_mask`.

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
        (1.0 = perfect, 0.0 = flat, None where the true G' differs from the
        background's by less than :data:`MIN_CONTRAST`; see :func:`contrast_transfer`)
        and ``contrast_transfer_loss``, the same on G'' = ``Im(mu)`` (when some target
        has a G'' contrast: a viscosity-only target's is here).

      When the prediction or the truth is per-frequency (``(F, *grid)``), each
      frequency is compared on its own (a single map is compared with every
      frequency); the top-level metrics are those of the first frequency and
      ``per_frequency`` is a list, in the dataset's frequency order, of dicts with
      ``frequency_hz`` and the same keys as above.
    """
    if dataset.mu is None:
        return {}
    grid = tuple(dataset.grid)
    pred = per_frequency(mu_pred, grid, "mu_pred")
    true = per_frequency(dataset.mu, grid, "dataset.mu")
    mask = interior_mask(_dataset_mask(dataset), margin, axes)
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


def per_frequency(mu: np.ndarray, grid: tuple[int, ...], name: str) -> np.ndarray:
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
    mask = mask & np.isfinite(pred)  # a classical map has no value where its stencil fails
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
            for key, part in (("contrast_transfer", np.real), ("contrast_transfer_loss", np.imag)):
                ratios = contrast_transfer(part(pred), part(true), regions, mask)
                if key == "contrast_transfer" or any(map(math.isfinite, ratios.values())):
                    out[key] = {str(label): finite_or_none(c) for label, c in ratios.items()}
    return out
