"""Figures: the PNGs of save_all exist and are real images; units on every colour bar."""

from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest

from helmholtz_pinn import figures
from helmholtz_pinn.data import Dataset

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def _dataset(grid=(12, 16), n_freq=2, truth=True, per_freq_truth=True):
    x, y = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    k = 0.7
    u = np.stack([np.exp(1j * k * (x + 0.3 * y * (f + 1)))[None] for f in range(n_freq)])
    u = np.broadcast_to(u[..., None], u.shape + (grid[2],)).copy() if len(grid) == 3 else u
    storage = np.where((x - grid[0] / 2) ** 2 + (y - grid[1] / 2) ** 2 < 9, 9e3, 3e3)
    if len(grid) == 3:
        storage = np.repeat(storage[..., None], grid[2], axis=-1)
    freq = np.array([60.0, 80.0][:n_freq])
    mu = storage + 1j * 2 * np.pi * freq.reshape(-1, *[1] * len(grid)) * 1.0
    mask = np.ones(grid, bool)
    mask[0, :] = False
    return Dataset(
        u=u.astype(np.complex64),
        frequency=freq,
        spacing=np.full(len(grid), 1.5e-3),
        mask=mask,
        mu=(mu if per_freq_truth else mu[0]) if truth else None,
        regions=(storage > 5e3).astype(int) + 1,
    )


def _fake_result(dataset, history=True):
    rng = np.random.default_rng(0)
    noise = 1 + 0.1 * rng.standard_normal((dataset.n_freq, *dataset.grid))
    truth = dataset.mu if dataset.mu is not None else np.full(dataset.grid, 4e3 + 300j)
    mu = np.broadcast_to(truth, (dataset.n_freq, *dataset.grid)) * noise
    steps = np.arange(1, 21) * 50
    hist = [
        {
            "step": int(s),
            "time_s": 0.1 * i,
            "lr": 1e-3 if s < 600 else 5e-4,
            "loss": 1.0 / s,
            "data": 0.6 / s,
            "pde": 0.4 / s,
            "retries": 0,
        }
        for i, s in enumerate(steps)
    ]
    return SimpleNamespace(mu=mu, history=hist if history else [])


def _check_png(path, min_size=(150, 200)):
    assert path.is_file(), path
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] >= min_size[0] and img.shape[1] >= min_size[1]
    rgb = img[..., :3].reshape(-1, 3)
    assert rgb.std() > 0.05, f"{path.name} looks blank"
    assert len(np.unique(np.round(rgb * 255), axis=0)) > 50, f"{path.name} has too few colours"


def _colorbar_labels(fig):
    return {ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"}


def test_save_all_writes_three_real_pngs(tmp_path):
    ds = _dataset()
    before = plt.get_fignums()
    paths = figures.save_all(_fake_result(ds), ds, tmp_path)
    assert [p.name for p in paths] == ["wave.png", "modulus.png", "loss.png"]
    for p in paths:
        _check_png(p)
    assert plt.get_fignums() == before  # no pyplot figures left open


def test_save_all_without_history_skips_the_loss_figure(tmp_path):
    ds = _dataset()
    paths = figures.save_all(_fake_result(ds, history=False), ds, tmp_path)
    assert [p.name for p in paths] == ["wave.png", "modulus.png"]
    assert not (tmp_path / "loss.png").exists()


def test_save_all_3d_and_no_truth(tmp_path):
    ds = _dataset(grid=(10, 12, 5), n_freq=1, truth=False)
    for p in figures.save_all(_fake_result(ds), ds, tmp_path):
        _check_png(p)


def test_modulus_figure_units_with_truth():
    ds = _dataset(per_freq_truth=False)
    fig = figures.modulus_figure(_fake_result(ds).mu, ds, fig=Figure())
    assert _colorbar_labels(fig) == {"kPa", "%"}
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert "true G'" in titles and "recovered G''" in titles and "60 Hz" in titles


def test_modulus_figure_without_dataset_reads_f_first():
    mu = np.full((3, 8, 9), 3e3 + 200j)
    fig = figures.modulus_figure(mu, fig=Figure())
    assert _colorbar_labels(fig) == {"kPa"}
    assert fig.axes[0].get_images()[0].get_array().shape == (9, 8)  # x horizontal


def test_modulus_figure_rejects_a_wrong_grid():
    ds = _dataset()
    with pytest.raises(ValueError, match="mu must have shape"):
        figures.modulus_figure(np.ones((2, 5, 5), complex), ds, fig=Figure())


def test_masked_voxels_are_blank():
    ds = _dataset()
    fig = figures.modulus_figure(_fake_result(ds).mu, ds, fig=Figure())
    img = fig.axes[0].get_images()[0].get_array()
    assert np.ma.is_masked(img) or np.isnan(np.asarray(img)[:, 0]).all()


def test_wave_figure_layout_and_units():
    ds = _dataset()
    fig = figures.wave_figure(ds.u, ds.frequency, spacing=ds.spacing, fig=Figure())
    maps = [ax for ax in fig.axes if ax.get_images()]
    assert len(maps) == 2 * ds.n_freq
    assert _colorbar_labels(fig) == {"u (data unit)", "|u| (data unit)"}
    assert maps[0].get_xlabel() == "x (mm)"
    with pytest.raises(ValueError, match="complex"):
        figures.wave_figure(ds.u.real, ds.frequency)


def test_comparison_figure(tmp_path):
    ds = _dataset()
    mu = _fake_result(ds).mu
    fig = figures.comparison_figure({"PINN": mu, "AHI": mu[0] * 1.3}, ds, fig=Figure())
    assert _colorbar_labels(fig) == {"G' (kPa)", "error (%)"}
    assert any("median" in ax.get_title() for ax in fig.axes)
    fig.savefig(tmp_path / "c.png", dpi=80)
    _check_png(tmp_path / "c.png")


def test_loss_figure_is_log_scale_and_handles_empty_history():
    fig = figures.loss_figure(_fake_result(_dataset()).history, fig=Figure())
    assert fig.axes[0].get_yscale() == "log"
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert labels == ["total loss", "data loss", "PDE loss"]
    empty = figures.loss_figure([], fig=Figure())
    assert empty.axes[0].texts


def test_pyplot_figures_for_notebooks():
    ds = _dataset()
    fig = figures.modulus_figure(_fake_result(ds).mu, ds)
    try:
        assert fig.number in plt.get_fignums()
    finally:
        plt.close(fig)


def test_uncertainty_figure_for_ensembles(tmp_path):
    ds = _dataset()
    result = _fake_result(ds)
    result.mu_std = 0.05 * result.mu.real + 0.02j * result.mu.imag
    paths = figures.save_all(result, ds, tmp_path)
    assert paths[-1].name == "uncertainty.png"
    _check_png(paths[-1])
    fig = figures.uncertainty_figure(result.mu, result.mu_std, ds, fig=Figure())
    assert _colorbar_labels(fig) == {"kPa", "%"}
