"""Figures in one style: wave fields, modulus maps beside the truth, loss curves.

Conventions shared by every figure:

- maps are drawn with x horizontal and y vertical (``origin="lower"``), axes in mm when
  the voxel spacing is known (voxels otherwise); a 3-D map shows its middle z slice;
- voxels outside the mask are blank (light grey);
- moduli in kPa (storage ``G' = Re mu``, loss ``G'' = Im mu``), errors in %, the wave
  field in the data's own unit; every colour bar carries its unit;
- losses on a log scale against the training step.

Each public function returns a matplotlib ``Figure``. Without ``fig=`` it is made with
pyplot (so it shows inline in a notebook and with ``plt.show()`` in a script); pass
``fig=matplotlib.figure.Figure()`` to draw without pyplot, as :func:`save_all` does, which
works headless with any backend and leaves no open pyplot figures behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from helmholtz_pinn.data import Dataset

__all__ = [
    "comparison_figure",
    "loss_figure",
    "modulus_figure",
    "save_all",
    "uncertainty_figure",
    "wave_figure",
]

CMAP_MODULUS = "viridis"
CMAP_WAVE = "RdBu_r"
CMAP_MAGNITUDE = "cividis"
CMAP_ERROR = "magma"
BLANK = "0.88"  # colour of voxels outside the mask
STYLE = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 8,
    "figure.dpi": 100,
}
PANEL = (2.9, 2.5)  # inches per map panel (with its colour bar)
DPI = 120


# --------------------------------------------------------------------------- helpers


def _figure(fig: Figure | None, n_rows: int, n_cols: int, panel=PANEL) -> Figure:
    """``fig`` (resized) or a new pyplot figure, constrained layout, for a panel grid."""
    size = (panel[0] * n_cols, panel[1] * n_rows)
    if fig is None:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=size, layout="constrained")
    fig.set_size_inches(*size)
    fig.set_layout_engine("constrained")
    return fig


def _style():
    import matplotlib

    return matplotlib.rc_context(STYLE)


def _cmap(name: str):
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=BLANK)


def _section(a: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """2-D display array: mask applied (NaN outside), middle z slice of 3-D, transposed
    so that x runs horizontally."""
    a = np.asarray(a, dtype=float)
    if mask is not None:
        a = np.where(mask, a, np.nan)
    if a.ndim == 3:
        a = a[..., a.shape[-1] // 2]
    return a.T


def _extent(grid: Sequence[int], spacing) -> tuple[tuple[float, ...] | None, str]:
    """imshow extent in mm (and the axis unit) from the voxel spacing in m."""
    if spacing is None:
        return None, "voxel"
    h = 1e3 * np.asarray(spacing, dtype=float)
    return (0.0, grid[0] * h[0], 0.0, grid[1] * h[1]), "mm"


def _panel(ax, img, title, cmap, unit, extent, axis_unit, vmin=None, vmax=None):
    im = ax.imshow(
        img,
        origin="lower",
        cmap=_cmap(cmap),
        extent=extent,
        vmin=vmin,
        vmax=vmax,
        interpolation="nearest",
    )
    ax.set_title(title)
    ax.set_xlabel(f"x ({axis_unit})")
    ax.set_ylabel(f"y ({axis_unit})")
    ax.figure.colorbar(im, ax=ax, shrink=0.9, label=unit)
    return im


def _finite(*arrays: np.ndarray) -> np.ndarray:
    values = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.array([])
    return values[np.isfinite(values)]


def _limits(truth: np.ndarray | None, *estimates: np.ndarray) -> tuple[float, float] | None:
    """Shared colour limits: the truth's range widened to the estimates' 2nd-98th
    percentiles, but by at most the truth's magnitude on either side (so outliers of a
    noisy estimate do not wash out the scale), plus 5 %; without a truth the estimates'
    2nd-98th percentiles."""
    values = _finite(*estimates)
    lo, hi = np.percentile(values, [2, 98]) if values.size else (np.inf, -np.inf)
    t = _finite(truth) if truth is not None else np.array([])
    if t.size:
        scale = max(abs(t.min()), abs(t.max()))
        lo = max(min(lo, t.min()), t.min() - scale)
        hi = min(max(hi, t.max()), t.max() + scale)
    if not np.isfinite([lo, hi]).all():
        return None
    pad = 0.05 * (hi - lo) if hi > lo else 0.5 * max(abs(hi), 1e-3)
    return float(lo - pad), float(hi + pad)


def _error_limit(*errors: np.ndarray) -> float:
    """Upper colour limit of an error map in %: the 95th percentile rounded up to a
    multiple of 5, between 5 and 100."""
    values = _finite(*errors)
    if not values.size:
        return 100.0
    return float(np.clip(5 * np.ceil(np.percentile(values, 95) / 5), 5, 100))


def _percent_error(estimate: np.ndarray, truth: np.ndarray, scale: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * np.abs(estimate - truth) / np.abs(scale)


def _median(a: np.ndarray) -> float:
    values = _finite(a)
    return float(np.median(values)) if values.size else float("nan")


def _pick(mu: np.ndarray, grid: tuple[int, ...] | None, index: int, name: str) -> np.ndarray:
    """One map of shape ``grid`` from ``mu`` of shape ``grid`` or ``(F, *grid)``. Without
    a grid, a 3-D array is read as ``(F, nx, ny)``."""
    mu = np.asarray(mu)
    if grid is None:
        return mu[index] if mu.ndim == 3 else mu
    if mu.shape == tuple(grid):
        return mu
    if mu.shape[1:] == tuple(grid):
        return mu[index]
    raise ValueError(f"{name} must have shape {tuple(grid)} or (F, *{tuple(grid)}); got {mu.shape}")


def _context(dataset: Dataset | None, mu: np.ndarray, index: int):
    """(grid, mask, spacing, truth map or None, frequency in Hz or None)."""
    if dataset is None:
        return None, None, None, None, None
    grid = tuple(dataset.grid)
    truth = None if dataset.mu is None else _pick(dataset.mu, grid, index, "dataset.mu")
    frequency = float(dataset.frequency[index]) if index < dataset.n_freq else None
    return grid, dataset.mask, dataset.spacing, truth, frequency


# --------------------------------------------------------------------------- figures


def wave_figure(
    u: np.ndarray,
    frequency: Sequence[float],
    *,
    spacing: Sequence[float] | None = None,
    mask: np.ndarray | None = None,
    component: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Wave field of one component: real part (top row) and magnitude (bottom row) for
    each frequency.

    Args:
      u: complex displacement ``(F, C, *grid)``, any length unit (shown as is).
      frequency: drive frequency of each field, Hz, ``(F,)``.
      spacing: voxel size in m (axes in mm); None labels the axes in voxels.
      mask: bool ``grid``; voxels outside it are blank.
      component: which displacement component to show.
      fig: draw into this figure (see the module docstring).
    """
    u = np.asarray(u)
    if u.ndim < 4 or not np.iscomplexobj(u):
        raise ValueError(f"u must be complex with shape (F, C, *grid); got {u.dtype} {u.shape}")
    if not 0 <= component < u.shape[1]:
        raise ValueError(f"component must be in 0..{u.shape[1] - 1}; got {component}")
    n_f = u.shape[0]
    extent, axis_unit = _extent(u.shape[2:], spacing)
    with _style():
        fig = _figure(fig, 2, n_f)
        axes = fig.subplots(2, n_f, squeeze=False)
        for f in range(n_f):
            field = u[f, component]
            shown = np.abs(field) if mask is None else np.abs(field)[mask]
            amp = float(np.max(shown)) if shown.size and np.max(shown) > 0 else 1.0
            label = f"{float(frequency[f]):g} Hz, component {component}"
            _panel(
                axes[0, f],
                _section(field.real, mask),
                f"Re u  ({label})",
                CMAP_WAVE,
                "u (data unit)",
                extent,
                axis_unit,
                vmin=-amp,
                vmax=amp,
            )
            _panel(
                axes[1, f],
                _section(np.abs(field), mask),
                f"|u|  ({label})",
                CMAP_MAGNITUDE,
                "|u| (data unit)",
                extent,
                axis_unit,
                vmin=0,
                vmax=amp,
            )
    return fig


def modulus_figure(
    mu: np.ndarray,
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Recovered storage and loss modulus in kPa; with the truth and the error maps (%)
    when ``dataset`` has a ground-truth ``mu``.

    With the truth: top row ``G'`` (truth, recovered, ``|dG'| / G'_true`` in %), bottom
    row ``G''`` (truth, recovered, ``|dG''| / |mu_true|`` in %). Without: recovered ``G'``
    and ``G''`` side by side.

    Args:
      mu: complex modulus in Pa, shape ``grid`` or ``(F, *grid)`` (without a dataset a
        3-D array is read as ``(F, nx, ny)``).
      dataset: supplies the grid, mask, spacing, frequency and the truth (optional).
      frequency_index: which frequency of a per-frequency modulus (and truth) to show.
      fig: draw into this figure (see the module docstring).
    """
    grid, mask, spacing, truth, freq = _context(dataset, mu, frequency_index)
    est = _pick(mu, grid, frequency_index, "mu")
    extent, axis_unit = _extent(est.shape, spacing)
    at = f" at {freq:g} Hz" if freq is not None else ""
    kpa = "kPa"
    with _style():
        if truth is None:
            fig = _figure(fig, 1, 2)
            axes = fig.subplots(1, 2, squeeze=False)[0]
            storage = _section(est.real / 1e3, mask)
            lim = _limits(None, storage) or (None, None)
            _panel(
                axes[0], storage, f"recovered G'{at}", CMAP_MODULUS, kpa, extent, axis_unit, *lim
            )
            _panel(
                axes[1],
                _section(est.imag / 1e3, mask),
                f"recovered G''{at}",
                CMAP_MODULUS,
                kpa,
                extent,
                axis_unit,
            )
            return fig
        fig = _figure(fig, 2, 3)
        axes = fig.subplots(2, 3, squeeze=False)
        errors = (
            _percent_error(est.real, truth.real, truth.real),
            _percent_error(est.imag, truth.imag, np.abs(truth)),
        )
        labels = (("G'", "|ΔG'| / G'_true"), ("G''", "|ΔG''| / |μ_true|"))
        for row, (part, err, (name, err_name)) in enumerate(
            zip((np.real, np.imag), errors, labels, strict=True)
        ):
            t, e = _section(part(truth) / 1e3, mask), _section(part(est) / 1e3, mask)
            lim = _limits(t, e) or (None, None)
            _panel(axes[row, 0], t, f"true {name}{at}", CMAP_MODULUS, kpa, extent, axis_unit, *lim)
            _panel(axes[row, 1], e, f"recovered {name}", CMAP_MODULUS, kpa, extent, axis_unit, *lim)
            err = _section(err, mask)
            _panel(
                axes[row, 2],
                err,
                f"{err_name}\nmedian {_median(err):.1f} %",
                CMAP_ERROR,
                "%",
                extent,
                axis_unit,
                0,
                _error_limit(err),
            )
    return fig


def comparison_figure(
    maps: Mapping[str, np.ndarray],
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Storage modulus ``G'`` (kPa) of several methods side by side, one shared colour
    scale; with a ground truth, the truth first and a row of relative errors (%) below.

    Args:
      maps: ``{"PINN": mu, "AHI": mu_ahi, ...}``, complex moduli in Pa, each of shape
        ``grid`` or ``(F, *grid)``.
      dataset: grid, mask, spacing and the truth (optional).
      frequency_index: frequency shown for per-frequency maps and truth.
      fig: draw into this figure (see the module docstring).
    """
    if not maps:
        raise ValueError("maps is empty; pass {'name': mu_in_pa, ...}")
    first = next(iter(maps.values()))
    grid, mask, spacing, truth, freq = _context(dataset, first, frequency_index)
    storage = {
        name: _section(_pick(m, grid, frequency_index, name).real / 1e3, mask)
        for name, m in maps.items()
    }
    t = None if truth is None else _section(truth.real / 1e3, mask)
    extent, axis_unit = _extent(np.shape(_pick(first, grid, frequency_index, "map")), spacing)
    lim = _limits(t, *storage.values()) or (None, None)
    panels = ([("truth", t)] if t is not None else []) + list(storage.items())
    n_rows, n_cols = (1 if t is None else 2), len(panels)
    at = f" ({freq:g} Hz)" if freq is not None else ""
    with _style():
        fig = _figure(fig, n_rows, n_cols, panel=(2.6, 2.4))
        axes = fig.subplots(n_rows, n_cols, squeeze=False)
        cmap = _cmap(CMAP_MODULUS)
        for ax, (name, img) in zip(axes[0], panels, strict=True):
            im = ax.imshow(
                img,
                origin="lower",
                cmap=cmap,
                extent=extent,
                vmin=lim[0],
                vmax=lim[1],
                interpolation="nearest",
            )
            ax.set_title(f"{name}: G'{at}" if name == "truth" else name)
        fig.colorbar(im, ax=axes[0, :], shrink=0.9, label="G' (kPa)")
        if t is not None:
            errors = {name: 100 * np.abs(img - t) / np.abs(t) for name, img in storage.items()}
            vmax = _error_limit(*errors.values())
            axes[1, 0].axis("off")
            axes[1, 0].text(
                0.5,
                0.5,
                "relative error\n|ΔG'| / G'_true",
                ha="center",
                va="center",
                transform=axes[1, 0].transAxes,
            )
            ecmap = _cmap(CMAP_ERROR)
            for ax, (name, err) in zip(axes[1, 1:], errors.items(), strict=True):
                im = ax.imshow(
                    err,
                    origin="lower",
                    cmap=ecmap,
                    extent=extent,
                    vmin=0,
                    vmax=vmax,
                    interpolation="nearest",
                )
                ax.set_title(f"{name}: median {_median(err):.1f} %")
            fig.colorbar(im, ax=axes[1, :], shrink=0.9, label="error (%)")
        for ax in axes.ravel():
            ax.set_xlabel(f"x ({axis_unit})")
            ax.set_ylabel(f"y ({axis_unit})")
    return fig


def uncertainty_figure(
    mu: np.ndarray,
    mu_std: np.ndarray,
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Ensemble spread of the storage modulus: mean ``G'`` (kPa), its standard deviation
    over the ensemble members (kPa) and the coefficient of variation ``std / mean`` (%).

    Args:
      mu: ensemble-mean complex modulus in Pa, ``grid`` or ``(F, *grid)``.
      mu_std: ``std(Re mu) + i std(Im mu)`` over the members, Pa, same shape
        (``Result.mu_std`` of an ``ensemble > 1`` run).
      dataset, frequency_index, fig: as in :func:`modulus_figure`.
    """
    grid, mask, spacing, _, freq = _context(dataset, mu, frequency_index)
    mean = _pick(mu, grid, frequency_index, "mu").real / 1e3
    std = _pick(mu_std, grid, frequency_index, "mu_std").real / 1e3
    extent, axis_unit = _extent(mean.shape, spacing)
    at = f" at {freq:g} Hz" if freq is not None else ""
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = _section(100 * std / np.abs(mean), mask)
    mean, std = _section(mean, mask), _section(std, mask)
    with _style():
        fig = _figure(fig, 1, 3)
        axes = fig.subplots(1, 3, squeeze=False)[0]
        _panel(
            axes[0],
            mean,
            f"ensemble mean G'{at}",
            CMAP_MODULUS,
            "kPa",
            extent,
            axis_unit,
            *(_limits(None, mean) or (None, None)),
        )
        _panel(
            axes[1],
            std,
            "ensemble std of G'",
            CMAP_ERROR,
            "kPa",
            extent,
            axis_unit,
            0,
            (_limits(None, std) or (0, 1))[1],
        )
        _panel(
            axes[2],
            cv,
            f"std / mean\nmedian {_median(cv):.1f} %",
            CMAP_ERROR,
            "%",
            extent,
            axis_unit,
            0,
            _error_limit(cv),
        )
    return fig


def loss_figure(history: Sequence[dict], *, fig: Figure | None = None) -> Figure:
    """Total, data and PDE loss (block means, nondimensional) on a log scale against
    the step, with the learning rate on a second log axis."""
    with _style():
        fig = _figure(fig, 1, 1, panel=(5.6, 3.4))
        ax = fig.subplots()
        ax.set_xlabel("training step")
        if not history:
            ax.text(
                0.5, 0.5, "no training history", ha="center", va="center", transform=ax.transAxes
            )
            return fig
        steps = np.array([h["step"] for h in history], dtype=float)
        styles = {
            "loss": ("total", "k", "-"),
            "data": ("data", "C0", "-"),
            "pde": ("PDE", "C3", "-"),
        }
        lines = []
        for key, (label, colour, ls) in styles.items():
            if key not in history[0]:
                continue
            y = np.array([h[key] for h in history], dtype=float)
            y = np.where(y > 0, y, np.nan)
            lines += ax.plot(steps, y, ls, color=colour, lw=1.4, label=f"{label} loss")
        ax.set_yscale("log")
        ax.set_ylabel("loss (nondimensional)")
        ax.grid(alpha=0.3, which="both", lw=0.5)
        if "lr" in history[0]:
            ax2 = ax.twinx()
            lr = np.array([h["lr"] for h in history], dtype=float)
            lines += ax2.plot(steps, lr, "--", color="0.5", lw=1.0, label="learning rate")
            ax2.set_yscale("log")
            ax2.set_ylabel("learning rate")
        ax.legend(lines, [ln.get_label() for ln in lines], loc="upper right")
    return fig


def save_all(result, dataset: Dataset, out: str | Path) -> list[Path]:
    """Write ``wave.png``, ``modulus.png``, ``loss.png`` (when the result has a training
    history) and ``uncertainty.png`` (when it has an ensemble spread ``mu_std``) into
    ``out``; returns the paths. Uses no pyplot state (headless-safe)."""
    from matplotlib.figure import Figure

    out = Path(out)
    figs = {
        "wave.png": wave_figure(
            dataset.u, dataset.frequency, spacing=dataset.spacing, mask=dataset.mask, fig=Figure()
        ),
        "modulus.png": modulus_figure(result.mu, dataset, fig=Figure()),
    }
    if result.history:
        figs["loss.png"] = loss_figure(result.history, fig=Figure())
    if getattr(result, "mu_std", None) is not None:
        figs["uncertainty.png"] = uncertainty_figure(
            result.mu, result.mu_std, dataset, fig=Figure()
        )
    paths = []
    for name, fig in figs.items():
        fig.savefig(out / name, dpi=DPI)
        paths.append(out / name)
    return paths
