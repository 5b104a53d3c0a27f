"""Figures in one style: wave fields, modulus maps beside the truth and their errors,
methods side by side, the ensemble spread, the training curves and :func:`save_all`,
which writes a run's PNGs.

Maps:
- x horizontal and y vertical (``origin="lower"``), axes in mm when the voxel spacing is
  known (voxels otherwise); a 3-D map shows its middle z slice, named in the figure's
  title (``z-slice k of nz``, k counted from 0 as in the array), as is a frequency index
  whose value in Hz is unknown (no dataset);
- voxels outside the mask are blank (light grey);
- moduli (storage ``G' = Re mu``, loss ``G'' = Im mu``) in kPa, or in Pa where the map's
  values stay below 1 kPa; each modulus panel names its frequency and unit; errors in %
  relative to the same part of the truth (``|G''_est - G''_true| / |G''_true|``); the
  wave field in the data's own unit; every colour bar carries its unit.

Training curves: losses (block means, nondimensional) on a log scale against the step,
the learning rate in a panel below. A batched history (an ensemble or slicewise fit, whose
records hold one value per member) draws every member as a thin line in its term's colour
and the median over the members bold: one legend entry per loss term, however many
members.

Each function returns a matplotlib ``Figure``, made with pyplot (inline in a notebook)
unless ``fig=matplotlib.figure.Figure()`` is passed: that draws without pyplot, headless
with any backend, as :func:`save_all` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from helmholtz_pinn.io.dataset import Dataset

__all__ = [
    "caption",
    "comparison_figure",
    "loss_figure",
    "misfit_figure",
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
PARTS = {"G'": np.real, "G''": np.imag}  # name -> part of the complex modulus


# --------------------------------------------------------------------------- style, helpers


def _figure(fig: Figure | None, n_rows: int, n_cols: int, panel=PANEL) -> Figure:
    """``fig`` (resized) or a new pyplot figure for a panel grid, without a layout engine
    (:func:`_arrange` places the panels)."""
    size = (panel[0] * n_cols, panel[1] * n_rows)
    if fig is None:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=size, layout="none")
    fig.set_size_inches(*size)
    fig.set_layout_engine("none")
    return fig


# Room around the panels, inches, at the sizes of STYLE (points / 72): the y axis (tick
# labels, wider on a log axis: "6x10^-4", and each line of its label), the x axis
# (ticks, tick labels, label), one title line, a colour bar beside its map (gap, bar,
# ticks and labels of up to five characters, its label), the figure's title and the
# caption under it.
Y_AXIS, Y_LOG, Y_LINE, X_AXIS, TITLE_LINE, GAP = 0.42, 0.62, 0.15, 0.42, 0.16, 0.1
BAR_GAP, BAR_WIDTH, COLORBAR = 0.07, 0.1, 0.8
SUPTITLE, CAPTION = 0.3, 0.2


def _colorbar(ax, im, label: str, beside=None):
    """A colour bar for ``im`` labelled ``label``, at the right of the map's drawn box (of
    ``beside``, the last map of a row, for a colour bar shared by the row), 0.9 of its
    height: it follows the box where a map's aspect ratio leaves its panel wider."""
    from matplotlib.transforms import Bbox

    fig, beside = ax.figure, beside or ax

    def place(cax, renderer):
        box = beside.get_position(original=False)
        w, _ = fig.get_size_inches()
        return Bbox.from_bounds(
            box.x1 + BAR_GAP / w, box.y0 + 0.05 * box.height, BAR_WIDTH / w, 0.9 * box.height
        )

    cax = fig.add_axes((0, 0, 0, 0), label="<colorbar>")
    cax.set_axes_locator(place)
    bar = fig.colorbar(im, cax=cax, label=label)
    cax.yaxis.get_offset_text().set_horizontalalignment("left")  # "1e-6": off the map
    return bar


def _arrange(fig: Figure) -> Figure:
    """Place the panel grid by fixed margins from what the figure holds (a fixed layout
    computed from the grid, its titles' lines, the y labels' lines, its colour bars, a
    figure title and a caption), without measuring any text: left of each panel its y
    axis, below it its x axis (where it has an x label), above it its title, right of it
    its colour bar (or, for colour bars shared by a row, right of the row)."""
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    if not panels:
        return fig
    grid = panels[0].get_gridspec()
    n_rows, n_cols = grid.get_geometry()
    w, h = fig.get_size_inches()
    bars = len(fig.axes) - len(panels)
    each = bars >= len([ax for ax in panels if ax.get_images()]) and bars > 0
    y_lines = max(ax.get_ylabel().count("\n") + 1 for ax in panels)
    log = any(ax.get_yscale() == "log" for ax in panels)
    y_axis = (Y_LOG if log else Y_AXIS) + Y_LINE * y_lines
    titles = max((ax.get_title().count("\n") + 1 if ax.get_title() else 0) for ax in panels)
    title = TITLE_LINE * titles + GAP
    x_axis = X_AXIS if any(ax.get_xlabel() for ax in panels) else GAP
    inner = [ax for ax in panels if ax.get_subplotspec().rowspan.stop < n_rows]
    inner_x = X_AXIS if any(ax.get_xlabel() for ax in inner) else GAP
    right = COLORBAR if bars else GAP * 2
    gap_x = y_axis + (COLORBAR if each else GAP)
    gap_y = inner_x + title
    top = title + (SUPTITLE if fig.get_suptitle() else 0)
    bottom = x_axis + (CAPTION if fig.get_supxlabel() else 0)
    width = max((w - y_axis - right - (n_cols - 1) * gap_x) / n_cols, 0.1)
    height = max((h - top - bottom - (n_rows - 1) * gap_y) / n_rows, 0.1)
    grid.update(
        left=y_axis / w,
        right=1 - right / w,
        bottom=bottom / h,
        top=1 - top / h,
        wspace=gap_x / width,
        hspace=gap_y / height,
    )
    for ax in panels:  # GridSpec.update moves the axes of pyplot's figures only
        ax.set_position(ax.get_subplotspec().get_position(fig))
    return fig


def _style():
    import matplotlib

    return matplotlib.rc_context(STYLE)


def _section(a: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """2-D display array: mask applied (NaN outside), middle z slice of 3-D, transposed
    so that x runs horizontally."""
    a = np.asarray(a, dtype=float)
    if mask is not None:
        a = np.where(mask, a, np.nan)
    if a.ndim == 3:
        a = a[..., a.shape[-1] // 2]
    return a.T


def _note(fig: Figure, grid: Sequence[int], unknown: int | None = None) -> None:
    """Title the figure with the z slice :func:`_section` shows of 3-D maps, and with the
    frequency index ``unknown`` whose value in Hz is not known."""
    notes = [] if unknown is None else [f"frequency {unknown} (Hz unknown without the dataset)"]
    notes += [f"z-slice {grid[2] // 2} of {grid[2]} (counted from 0)"] if len(grid) == 3 else []
    if notes:
        fig.suptitle("; ".join(notes))


def _extent(grid: Sequence[int], spacing) -> tuple[tuple[float, ...] | None, str]:
    """imshow extent in mm (and the axis unit) from the voxel spacing in m."""
    if spacing is None:
        return None, "voxel"
    h = 1e3 * np.asarray(spacing, dtype=float)
    return (0.0, grid[0] * h[0], 0.0, grid[1] * h[1]), "mm"


def _image(ax, img, cmap, where, vmin=None, vmax=None):
    """One map on ``ax``, placed and its axes labelled by ``where = (extent, axis unit)``
    from :func:`_extent`; returns the image."""
    import matplotlib

    extent, axis_unit = where
    im = ax.imshow(
        img,
        origin="lower",
        cmap=matplotlib.colormaps[cmap].with_extremes(bad=BLANK),
        extent=extent,
        vmin=vmin,
        vmax=vmax,
        interpolation="nearest",
    )
    ax.set_xlabel(f"x ({axis_unit})")
    ax.set_ylabel(f"y ({axis_unit})")
    return im


def _panel(ax, img, title, cmap, label, where, vmin=None, vmax=None):
    """A map with its title and its own colour bar labelled ``label`` (with the unit)."""
    im = _image(ax, img, cmap, where, vmin, vmax)
    ax.set_title(title, y=1.0)  # a fixed place: no search for top tick labels
    _colorbar(ax, im, label)
    return im


def _finite(*arrays: np.ndarray) -> np.ndarray:
    values = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.array([])
    return values[np.isfinite(values)]


def _unit(*maps_pa: np.ndarray) -> tuple[float, str]:
    """(divisor, unit) to show moduli in Pa: kPa unless the 98th percentile of the
    magnitudes stays below 1 kPa."""
    values = np.abs(_finite(*maps_pa))
    return (1e3, "kPa") if values.size and np.percentile(values, 98) >= 1e3 else (1.0, "Pa")


def _limits(truth: np.ndarray | None, *estimates: np.ndarray) -> tuple[float, float] | None:
    """Shared colour limits: the truth's range widened to the estimates' 2nd-98th
    percentiles by at most the truth's magnitude on either side (outliers of a noisy
    estimate do not wash out the scale), plus 5 %; without a truth those percentiles."""
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
    top = np.percentile(values, 95) if values.size else 100.0
    return float(np.clip(5 * np.ceil(top / 5), 5, 100))


def _median(a: np.ndarray) -> float:
    values = _finite(a)
    return float(np.median(values)) if values.size else float("nan")


def _error(estimate: np.ndarray, truth: np.ndarray, name: str, unit: str):
    """Error map of modulus part ``name`` (both maps in ``unit``): ``(map, what, stat,
    colour bar label, upper limit)``. Relative to the same part of the truth, in %, blank
    where that truth is 0; absolute, in ``unit``, where the truth is 0 everywhere."""
    if np.any(_finite(truth) != 0):
        with np.errstate(divide="ignore", invalid="ignore"):
            err = np.where(truth != 0, 100 * np.abs(estimate - truth) / np.abs(truth), np.nan)
        what, label = f"{name} error (relative to {name})", f"|Δ{name}| / |{name}_true| (%)"
        return err, what, f"median {_median(err):.1f} %", label, _error_limit(err)
    err = np.abs(estimate - truth)
    what, label = f"{name} error (absolute, true {name} = 0)", f"|Δ{name}| ({unit})"
    return err, what, f"median {_median(err):.3g} {unit}", label, None


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
    raise InputError(f"{name} must have shape {tuple(grid)} or (F, *{tuple(grid)}); got {mu.shape}")


def _context(dataset: Dataset | None, index: int):
    """(grid, mask, spacing, truth map or None, " at <f> Hz" for titles or "")."""
    if dataset is None:
        return None, None, None, None, ""
    grid = tuple(dataset.grid)
    truth = None if dataset.mu is None else _pick(dataset.mu, grid, index, "dataset.mu")
    at = f" at {float(dataset.frequency[index]):g} Hz" if index < dataset.n_freq else ""
    return grid, dataset.mask, dataset.spacing, truth, at


# --------------------------------------------------------------------------- figures


def wave_figure(
    u: np.ndarray,
    frequency: Sequence[float],
    *,
    spacing: Sequence[float] | None = None,
    mask: np.ndarray | None = None,
    component: int | None = 0,
    fig: Figure | None = None,
) -> Figure:
    """Wave field: of one ``component``, real part (top row) and magnitude (bottom row)
    for each frequency; of every component (``component=None``), the real part of each
    (one row per component).

    Args:
      u: complex displacement ``(F, C, *grid)``, any length unit (shown as is).
      frequency: drive frequency of each field, Hz, ``(F,)``.
      spacing: voxel size in m (axes in mm); None labels the axes in voxels.
      mask: bool ``grid``; voxels outside it are blank.
      component: which displacement component to show; None: all, real parts.
      fig: draw into this figure (see the module docstring).
    """
    u = np.asarray(u)
    if u.ndim < 4 or not np.iscomplexobj(u):
        raise InputError(f"u must be complex with shape (F, C, *grid); got {u.dtype} {u.shape}")
    if component is not None and not 0 <= component < u.shape[1]:
        raise InputError(f"component must be in 0..{u.shape[1] - 1} or None; got {component}")
    n_f = u.shape[0]
    where = _extent(u.shape[2:], spacing)
    rows = [("Re", c) for c in range(u.shape[1])] if component is None else [
        ("Re", component), ("abs", component)]  # fmt: skip
    with _style():
        fig = _figure(fig, len(rows), n_f)
        axes = fig.subplots(len(rows), n_f, squeeze=False)
        for f in range(n_f):
            for r, (part, c) in enumerate(rows):
                field = u[f, c]
                shown = np.abs(field) if mask is None else np.abs(field)[mask]
                amp = float(np.max(shown)) if shown.size and np.max(shown) > 0 else 1.0
                at = f"at {float(frequency[f]):g} Hz, component {c}"
                if part == "Re":
                    image = _section(field.real, mask)
                    _panel(axes[r, f], image, f"Re u {at}", CMAP_WAVE, "Re u (data unit)",
                           where, -amp, amp)  # fmt: skip
                else:
                    image = _section(np.abs(field), mask)
                    _panel(axes[r, f], image, f"|u| {at}", CMAP_MAGNITUDE, "|u| (data unit)",
                           where, 0, amp)  # fmt: skip
        _note(fig, u.shape[2:])
    return _arrange(fig)


def modulus_figure(
    mu: np.ndarray,
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Recovered storage and loss modulus (kPa, or Pa below 1 kPa); with the truth and
    the error maps (%) when ``dataset`` has a ground-truth ``mu``.

    With the truth: top row ``G'`` (truth, recovered, ``|ΔG'| / |G'_true|`` in %), bottom
    row ``G''`` (truth, recovered, ``|ΔG''| / |G''_true|`` in %; the absolute error where
    the true ``G''`` is 0 everywhere). Without: recovered ``G'`` and ``G''`` side by side.

    Args:
      mu: complex modulus in Pa, shape ``grid`` or ``(F, *grid)`` (without a dataset a
        3-D array is read as ``(F, nx, ny)``).
      dataset: supplies the grid, mask, spacing, frequency and the truth (optional).
      frequency_index: which frequency of a per-frequency modulus (and truth) to show.
      fig: draw into this figure (see the module docstring).
    """
    grid, mask, spacing, truth, at = _context(dataset, frequency_index)
    est = _pick(mu, grid, frequency_index, "mu")
    where = _extent(est.shape, spacing)
    n_rows, n_cols = (1, 2) if truth is None else (2, 3)
    with _style():
        fig = _figure(fig, n_rows, n_cols)
        axes = fig.subplots(n_rows, n_cols, squeeze=False)
        for i, (name, part) in enumerate(PARTS.items()):
            e = _section(part(est), mask)
            t = None if truth is None else _section(part(truth), mask)
            scale, unit = _unit(e if t is None else t)
            e, t = e / scale, (None if t is None else t / scale)
            lim = _limits(t, e) or (None, None)
            panels = [("recovered", e)] if t is None else [("true", t), ("recovered", e)]
            row = axes[0, i : i + 1] if t is None else axes[i, :2]
            for ax, (kind, img) in zip(row, panels, strict=True):
                title = f"{kind} {name}{at} ({unit})"
                _panel(ax, img, title, CMAP_MODULUS, f"{name} ({unit})", where, *lim)
            if t is not None:
                err, what, stat, label, vmax = _error(e, t, name, unit)
                title = f"{what}\n{stat}"
                _panel(axes[i, 2], err, title, CMAP_ERROR, label, where, 0, vmax)
        _note(fig, est.shape, None if at else frequency_index)
    return _arrange(fig)


def comparison_figure(
    maps: Mapping[str, np.ndarray],
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Storage modulus ``G'`` (kPa, or Pa below 1 kPa) of several methods side by side,
    one shared colour scale; with a ground truth, the truth first and a row of errors
    relative to the true ``G'`` (%) below.

    Args:
      maps: ``{"PINN": mu, "AHI": mu_ahi, ...}``, complex moduli in Pa, each of shape
        ``grid`` or ``(F, *grid)``.
      dataset: grid, mask, spacing and the truth (optional).
      frequency_index: frequency shown for per-frequency maps and truth.
      fig: draw into this figure (see the module docstring).
    """
    if not maps:
        raise InputError("maps is empty; pass {'name': mu_in_pa, ...}")
    grid, mask, spacing, truth, at = _context(dataset, frequency_index)
    picked = {name: _pick(m, grid, frequency_index, name) for name, m in maps.items()}
    storage = {name: _section(m.real, mask) for name, m in picked.items()}
    t = None if truth is None else _section(truth.real, mask)
    scale, unit = _unit(*storage.values()) if t is None else _unit(t)
    storage = {name: img / scale for name, img in storage.items()}
    t = None if t is None else t / scale
    shape = np.shape(next(iter(picked.values())))
    where = _extent(shape, spacing)
    lim = _limits(t, *storage.values()) or (None, None)
    panels = ([("true", t)] if t is not None else []) + list(storage.items())
    n_rows, n_cols = (1 if t is None else 2), len(panels)
    with _style():
        fig = _figure(fig, n_rows, n_cols, panel=(2.6, 2.4))
        axes = fig.subplots(n_rows, n_cols, squeeze=False)
        for ax, (name, img) in zip(axes[0], panels, strict=True):
            im = _image(ax, img, CMAP_MODULUS, where, *lim)
            ax.set_title(f"{name}{'' if name == 'true' else ':'} G'{at} ({unit})", y=1.0)
        _colorbar(axes[0, 0], im, f"G' ({unit})", beside=axes[0, -1])
        if t is not None:
            errors = {name: _error(img, t, "G'", unit) for name, img in storage.items()}
            vmax = max((e[4] or 0) for e in errors.values()) or None
            _, what, _, label, _ = next(iter(errors.values()))
            ax = axes[1, 0]
            ax.axis("off")
            ax.text(
                0.5,
                0.5,
                what.replace(" (", "\n("),
                ha="center",
                va="center",
                transform=ax.transAxes,
            )
            for ax, (name, (err, _, stat, _, _)) in zip(axes[1, 1:], errors.items(), strict=True):
                im = _image(ax, err, CMAP_ERROR, where, 0, vmax)
                ax.set_title(f"{name}: {stat}", y=1.0)
            _colorbar(axes[1, 0], im, label, beside=axes[1, -1])
        _note(fig, shape, None if at else frequency_index)
    return _arrange(fig)


def uncertainty_figure(
    mu: np.ndarray,
    mu_std: np.ndarray,
    dataset: Dataset | None = None,
    *,
    frequency_index: int = 0,
    fig: Figure | None = None,
) -> Figure:
    """Ensemble spread of the storage modulus: mean ``G'``, its standard deviation over
    the ensemble members (both in kPa, or Pa below 1 kPa) and the coefficient of
    variation ``std / |mean|`` (%).

    Args:
      mu: ensemble-mean complex modulus in Pa, ``grid`` or ``(F, *grid)``.
      mu_std: ``std(Re mu) + i std(Im mu)`` over the members, Pa, same shape
        (``Result.mu_std`` of an ``ensemble > 1`` run).
      dataset, frequency_index, fig: as in :func:`modulus_figure`.
    """
    grid, mask, spacing, _, at = _context(dataset, frequency_index)
    mean = _pick(mu, grid, frequency_index, "mu").real
    std = _pick(mu_std, grid, frequency_index, "mu_std").real
    shape = mean.shape
    where = _extent(shape, spacing)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = _section(100 * std / np.abs(mean), mask)
    (m_scale, m_unit), (s_scale, s_unit) = _unit(mean), _unit(std)
    mean, std = _section(mean / m_scale, mask), _section(std / s_scale, mask)
    with _style():
        fig = _figure(fig, 1, 3)
        ax = fig.subplots(1, 3, squeeze=False)[0]
        title, lim = f"ensemble mean G'{at} ({m_unit})", _limits(None, mean) or (None, None)
        _panel(ax[0], mean, title, CMAP_MODULUS, f"G' ({m_unit})", where, *lim)
        title, top = f"ensemble std of G'{at} ({s_unit})", (_limits(None, std) or (0, 1))[1]
        _panel(ax[1], std, title, CMAP_ERROR, f"std of G' ({s_unit})", where, 0, top)
        title, top = f"std / |mean| of G'{at}\nmedian {_median(cv):.1f} %", _error_limit(cv)
        _panel(ax[2], cv, title, CMAP_ERROR, "std / |mean| (%)", where, 0, top)
        _note(fig, shape, None if at else frequency_index)
    return _arrange(fig)


# ---------------------------------------------------------------- training curves, save_all

DPI = 120
LOSSES = {"loss": ("total loss", "k"), "data": ("data loss", "C0"), "pde": ("PDE loss", "C3")}


def _series(history: Sequence[dict], key: str) -> np.ndarray:
    """Values of ``key`` as ``(records, members)`` (one member for a single fit); NaN
    where a record holds fewer members, or a value is not finite and positive (log axes)."""
    rows = [np.atleast_1d(np.asarray(h[key], dtype=float)) for h in history]
    y = np.full((len(rows), max(len(r) for r in rows)), np.nan)
    for i, r in enumerate(rows):
        y[i, : len(r)] = r
    return np.where(np.isfinite(y) & (y > 0), y, np.nan)


def _draw(ax, steps: np.ndarray, y: np.ndarray, colour: str, label: str):
    """One curve: the single fit's line, or each member thin (unlabelled, so out of the
    legend) and their median bold; returns the labelled line."""
    if y.shape[1] > 1:
        ax.plot(steps, y, "-", color=colour, lw=0.6, alpha=0.35)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a step where all are NaN
            y = np.nanmedian(y, axis=1, keepdims=True)
    return ax.plot(steps, y[:, 0], "-", color=colour, lw=1.4, label=label)[0]


def loss_figure(history: Sequence[dict], *, fig: Figure | None = None) -> Figure:
    """Total, data and PDE loss (block means, nondimensional) on a log scale against
    the step, with the learning rate (log scale) in a panel below.

    Args:
      history: ``Result.history``, one record per block with ``step`` and the losses
        ``loss``, ``data``, ``pde`` (and ``lr``); in a batched run each value is a list
        with one entry per member, drawn as thin lines around the median over members.
      fig: draw into this figure (see the module docstring).
    """
    has_lr = bool(history) and "lr" in history[0]
    with _style():
        fig = _figure(fig, 1, 1, panel=(5.6, 4.4 if has_lr else 3.4))
        shape = {"height_ratios": (3, 1)} if has_lr else {}
        axes = fig.subplots(1 + has_lr, 1, sharex=True, squeeze=False, gridspec_kw=shape)[:, 0]
        ax = axes[0]
        axes[-1].set_xlabel("training step")
        if not history:
            ax.text(
                0.5, 0.5, "no training history", ha="center", va="center", transform=ax.transAxes
            )
            return _arrange(fig)
        steps = np.array([h["step"] for h in history], dtype=float)
        members = 1
        for key, (label, colour) in LOSSES.items():
            if key in history[0]:
                y = _series(history, key)
                members = max(members, y.shape[1])
                _draw(ax, steps, y, colour, label)
        ax.set_yscale("log")
        ax.set_ylabel("loss (nondimensional)")
        ax.grid(alpha=0.3, which="both", lw=0.5)
        note = None if members == 1 else f"{members} members: each thin, median bold"
        ax.legend(loc="upper right", title=note)
        if has_lr:
            _draw(axes[1], steps, _series(history, "lr"), "0.4", "learning rate")
            axes[1].set_yscale("log")
            axes[1].set_ylabel("learning rate\n(nondimensional)")
            axes[1].grid(alpha=0.3, which="both", lw=0.5)
    return _arrange(fig)


def misfit_figure(
    misfit: np.ndarray,
    frequency: Sequence[float],
    *,
    spacing: Sequence[float] | None = None,
    noise: Sequence[float] | None = None,
    fig: Figure | None = None,
) -> Figure:
    """Where the fitted wave field leaves the data: one map per frequency of
    :func:`helmholtz_pinn.assess.metrics.wave_misfit` (``(F, *grid)``, a fraction, NaN outside the
    mask) in % of the field's RMS, on one colour scale. ``noise``: the estimated noise
    fraction per frequency, shown in the titles: a misfit at that level is noise, one
    well above it is field the networks did not follow (the modulus there is less sure)."""
    misfit = 100 * np.asarray(misfit, dtype=float)
    n_f = misfit.shape[0]
    where = _extent(misfit.shape[1:], spacing)
    finite = misfit[np.isfinite(misfit)]
    top = float(np.percentile(finite, 99)) if finite.size else 1.0
    with _style():
        fig = _figure(fig, 1, n_f)
        axes = fig.subplots(1, n_f, squeeze=False)[0]
        for f in range(n_f):
            values = misfit[f][np.isfinite(misfit[f])]
            title = f"|u_fit - u| at {float(frequency[f]):g} Hz"
            title += f"\nmedian {np.median(values):.3g} %" if values.size else ""
            title += "" if noise is None else f", noise {100 * float(noise[f]):.3g} %"
            img = _section(misfit[f], None)
            _panel(axes[f], img, title, "magma", "% of the field's RMS", where, 0, top or 1.0)
        _note(fig, misfit.shape[1:])
    return _arrange(fig)


def caption(facts: Mapping, config=None, *, data_only: bool = False) -> str:
    """The line under a saved figure: what made the map (the PINN's law and steps, or the
    baseline's method and smoothing) and the input file (the facts' ``input``); only the
    input for a figure of the data (``data_only``). Empty when nothing is known."""
    parts = []
    if not data_only and facts.get("method"):
        settings = facts.get("baseline_settings") or {}
        smoothing = settings.get("smoothing")
        parts.append(f"{facts['method']} baseline" + (f", {smoothing} smoothing" if smoothing
                     and smoothing != "none" else ""))  # fmt: skip
    elif not data_only and isinstance(facts.get("steps"), int):
        law = (facts.get("law") or {}).get("mu_model") or getattr(config, "mu_model", None)
        steps = f"{facts['steps']} steps"
        polish = facts.get("lbfgs") or {}
        if polish and not polish.get("skipped"):
            steps += f" + {polish['steps']} L-BFGS"
        parts.append(", ".join(p for p in ("PINN", f"law {law}" if law else "", steps) if p))
    if facts.get("input"):
        parts.append(f"input {facts['input']}")
    return "; ".join(parts)


def save_all(
    result, dataset: Dataset, out: str | Path, *, misfit: np.ndarray | None = None
) -> list[Path]:
    """Write ``wave.png``, ``modulus.png``, ``loss.png`` (when the result has a training
    history), ``misfit.png`` (a PINN result's :func:`misfit_figure`) and
    ``uncertainty.png`` (when it has an ensemble spread ``mu_std``) into ``out``; returns
    the paths. Uses no pyplot state (headless-safe). ``misfit``: the result's
    :func:`helmholtz_pinn.assess.metrics.wave_misfit` when the caller has it already."""
    from matplotlib.figure import Figure

    out = Path(out)
    figs = {
        "wave.png": wave_figure(
            dataset.u,
            dataset.frequency,
            spacing=dataset.spacing,
            mask=dataset.mask,
            component=None if dataset.n_comp > 1 else 0,
            fig=Figure(),
        ),
        "modulus.png": modulus_figure(result.mu, dataset, fig=Figure()),
    }
    facts = getattr(result, "metrics", {})
    method = facts.get("method")
    if method is not None:  # a classical baseline: the figure names it
        figs["modulus.png"].suptitle(f"{method} baseline (not the PINN)")
    if result.history:
        figs["loss.png"] = loss_figure(result.history, fig=Figure())
    if "wave_misfit" in getattr(result, "metrics", {}):
        from helmholtz_pinn.assess.metrics import wave_misfit

        if misfit is None:
            misfit = wave_misfit(result.u_fit, dataset.u, dataset.mask)
        figs["misfit.png"] = misfit_figure(
            misfit,
            dataset.frequency,
            spacing=dataset.spacing,
            noise=result.metrics["wave_misfit"].get("noise"),
            fig=Figure(),
        )
    if getattr(result, "mu_std", None) is not None:
        figs["uncertainty.png"] = uncertainty_figure(
            result.mu, result.mu_std, dataset, fig=Figure()
        )
    paths = []
    for name, fig in figs.items():
        text = caption(facts, getattr(result, "config", None), data_only=name == "wave.png")
        if text:
            with _style():
                fig.supxlabel(text, fontsize=STYLE["xtick.labelsize"], color="0.3")
        _arrange(fig).savefig(out / name, dpi=DPI)
        paths.append(out / name)
    return paths
