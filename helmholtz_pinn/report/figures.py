"""Figures in one style: the maps of :mod:`helmholtz_pinn.report.maps` (wave field, modulus
beside the truth and its errors, methods side by side, ensemble spread), the training
curves and :func:`save_all`, which writes a run's PNGs.

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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from helmholtz_pinn.report.maps import (
    _extent,
    _figure,
    _note,
    _panel,
    _section,
    _style,
    comparison_figure,
    modulus_figure,
    uncertainty_figure,
    wave_figure,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from helmholtz_pinn.io.dataset import Dataset

__all__ = [
    "comparison_figure",
    "loss_figure",
    "misfit_figure",
    "modulus_figure",
    "save_all",
    "uncertainty_figure",
    "wave_figure",
]

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
            return fig
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
    return fig


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
    return fig


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
            dataset.u, dataset.frequency, spacing=dataset.spacing, mask=dataset.mask, fig=Figure()
        ),
        "modulus.png": modulus_figure(result.mu, dataset, fig=Figure()),
    }
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
        fig.savefig(out / name, dpi=DPI)
        paths.append(out / name)
    return paths
