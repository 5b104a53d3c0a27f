"""Figures in one style: wave fields, modulus maps (kPa) beside the truth, loss curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CMAP_MODULUS = "viridis"
CMAP_WAVE = "RdBu_r"


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg",) and not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _interactive() -> bool:
    try:
        from IPython import get_ipython

        return get_ipython() is not None
    except ImportError:
        return False


def _slice(a: np.ndarray) -> np.ndarray:
    """A 2-D view: the middle z-slice of a 3-D map."""
    return a if a.ndim == 2 else a[..., a.shape[-1] // 2]


def _show(ax, img, title, cmap, unit=None, **kw):
    im = ax.imshow(_slice(img).T, origin="lower", cmap=cmap, **kw)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    bar = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if unit:
        bar.set_label(unit)


def wave_figure(u: np.ndarray, frequency: np.ndarray):
    """Re u and |u| of the first component for each frequency (data units)."""
    plt = _pyplot()
    n_f = u.shape[0]
    fig, axes = plt.subplots(2, n_f, figsize=(3.2 * n_f, 5.6), squeeze=False)
    for f in range(n_f):
        field = u[f, 0]
        vmax = float(np.max(np.abs(field)))
        _show(axes[0, f], field.real, f"Re u, {frequency[f]:g} Hz", CMAP_WAVE,
              vmin=-vmax, vmax=vmax)
        _show(axes[1, f], np.abs(field), f"|u|, {frequency[f]:g} Hz", "magma")
    fig.tight_layout()
    return fig


def modulus_figure(mu: np.ndarray, dataset=None):
    """Recovered storage and loss modulus (kPa), with the truth and error when known."""
    plt = _pyplot()
    mu0 = mu[0] if mu.ndim == (dataset.ndim + 1 if dataset else 3) else mu
    truth = None
    if dataset is not None and dataset.mu is not None:
        truth = dataset.mu if dataset.mu.ndim == dataset.ndim else dataset.mu[0]
    n = 2 if truth is None else 4
    fig, axes = plt.subplots(1, n, figsize=(3.4 * n, 3.2))
    vmin, vmax = np.percentile(mu0.real / 1e3, [1, 99])
    if truth is not None:
        vmin, vmax = min(vmin, truth.real.min() / 1e3), max(vmax, truth.real.max() / 1e3)
        _show(axes[0], truth.real / 1e3, "true G'", CMAP_MODULUS, "kPa", vmin=vmin, vmax=vmax)
    k = 0 if truth is None else 1
    _show(axes[k], mu0.real / 1e3, "recovered G'", CMAP_MODULUS, "kPa", vmin=vmin, vmax=vmax)
    _show(axes[k + 1], mu0.imag / 1e3, "recovered G''", CMAP_MODULUS, "kPa")
    if truth is not None:
        err = 100 * np.abs(mu0.real - truth.real) / np.abs(truth.real)
        _show(axes[3], err, "|G' error|", "inferno", "%", vmin=0, vmax=min(100, err.max()))
    fig.tight_layout()
    return fig


def loss_figure(history: list[dict]):
    """Total, data and PDE loss per block on a log scale."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    steps = [h["step"] for h in history]
    for name in ("loss", "data", "pde"):
        ax.semilogy(steps, [max(h[name], 1e-30) for h in history], label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nondimensional)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save_all(result, dataset, out: Path) -> list[Path]:
    """wave.png, modulus.png, loss.png in ``out``."""
    plt = _pyplot()
    figs = {"wave.png": wave_figure(dataset.u, dataset.frequency),
            "modulus.png": modulus_figure(result.mu, dataset),
            "loss.png": loss_figure(result.history)}
    paths = []
    for name, fig in figs.items():
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)
    return paths
