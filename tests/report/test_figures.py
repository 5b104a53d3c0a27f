"""Figures: the PNGs of save_all exist and are real images; every axis and colour bar
states its unit; the error maps are relative to the same part of the truth; titles name
the frequency and the z slice; batched loss histories keep one legend entry per term."""

import dataclasses
import warnings
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest

from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.report import figures

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


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.get_images()]


def _map(fig, title_start):
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith(title_start)]
    return np.ma.filled(ax.get_images()[0].get_array().astype(float), np.nan)


def test_modulus_figure_units_with_truth():
    ds = _dataset(per_freq_truth=False)
    fig = figures.modulus_figure(_fake_result(ds).mu, ds, fig=Figure())
    # G' of 3-9 kPa in kPa, G'' = 2 pi 60 Hz x 1 Pa s = 377 Pa in Pa
    assert _colorbar_labels(fig) == {
        "G' (kPa)",
        "G'' (Pa)",
        "|ΔG'| / |G'_true| (%)",
        "|ΔG''| / |G''_true| (%)",
    }
    assert _titles(fig)[:2] + _titles(fig)[3:5] == [
        "true G' at 60 Hz (kPa)",
        "recovered G' at 60 Hz (kPa)",
        "true G'' at 60 Hz (Pa)",
        "recovered G'' at 60 Hz (Pa)",
    ]
    assert fig.get_suptitle() == ""  # 2-D, frequency known: nothing more to say


def test_error_maps_are_relative_to_the_same_part_of_the_truth():
    """G' exact, G'' 15 % too high: the G'' panel shows 15 % (relative to |mu| it would
    read about 1.8 % at G' = 9 kPa, G'' = 377 Pa), the G' panel 0 %."""
    ds = _dataset(n_freq=1)
    truth = ds.mu[0]
    estimate = truth.real + 1.15j * truth.imag
    fig = figures.modulus_figure(estimate, ds, fig=Figure())
    g2 = _map(fig, "G'' error (relative to G'')")
    np.testing.assert_allclose(np.nanmedian(g2), 15.0, rtol=1e-9)
    np.testing.assert_allclose(g2[np.isfinite(g2)], 15.0, rtol=1e-9)  # every voxel
    assert "median 15.0 %" in next(t for t in _titles(fig) if t.startswith("G'' error"))
    assert np.nanmax(_map(fig, "G' error (relative to G')")) == 0.0
    relative_to_mu = 100 * 0.15 * truth.imag / np.abs(truth)
    assert np.median(relative_to_mu) < 5  # what the old panel showed instead


def test_error_map_of_an_elastic_truth_is_absolute():
    ds = _dataset(n_freq=1)
    ds = dataclasses.replace(ds, mu=ds.mu.real + 0j)  # G''_true = 0: relative is undefined
    fig = figures.modulus_figure(ds.mu + 20j, ds, fig=Figure())
    g2 = _map(fig, "G'' error (absolute, true G'' = 0)")
    np.testing.assert_allclose(g2[np.isfinite(g2)], 20.0)
    assert "|ΔG''| (Pa)" in _colorbar_labels(fig)


def test_3d_titles_name_the_z_slice_and_the_frequency(tmp_path):
    ds = _dataset(grid=(10, 12, 5), n_freq=1)
    mu = _fake_result(ds).mu
    figs = [
        figures.modulus_figure(mu, ds, fig=Figure()),
        figures.comparison_figure({"PINN": mu}, ds, fig=Figure()),
        figures.uncertainty_figure(mu, 0.05 * mu, ds, fig=Figure()),
        figures.wave_figure(ds.u, ds.frequency, spacing=ds.spacing, fig=Figure()),
    ]
    for fig in figs:
        assert fig.get_suptitle() == "z-slice 2 of 5 (counted from 0)"
        assert all("at 60 Hz" in t for t in _titles(fig) if "error" not in t and ":" not in t)
    assert fig.axes[0].get_images()[0].get_array().shape == (12, 10)  # x-y plane


def test_every_map_axis_and_colour_bar_states_its_unit():
    ds = _dataset()
    mu = _fake_result(ds).mu
    figs = [
        figures.modulus_figure(mu, ds, fig=Figure()),
        figures.modulus_figure(mu, fig=Figure()),
        figures.comparison_figure({"PINN": mu, "AHI": mu[0] * 1.3}, ds, fig=Figure()),
        figures.uncertainty_figure(mu, 0.05 * mu, ds, fig=Figure()),
        figures.wave_figure(ds.u, ds.frequency, spacing=ds.spacing, fig=Figure()),
    ]
    for fig in figs:
        for ax in fig.axes:
            if ax.get_images():
                assert ax.get_xlabel() in ("x (mm)", "x (voxel)"), ax.get_xlabel()
                assert ax.get_ylabel() in ("y (mm)", "y (voxel)"), ax.get_ylabel()
        labels = _colorbar_labels(fig)
        assert labels and all(label.endswith(("(kPa)", "(Pa)", "(%)", "unit)")) for label in labels)


def test_modulus_figure_without_dataset_reads_f_first():
    mu = np.full((3, 8, 9), 3e3 + 200j)
    fig = figures.modulus_figure(mu, frequency_index=1, fig=Figure())
    assert _colorbar_labels(fig) == {"G' (kPa)", "G'' (Pa)"}
    assert fig.get_suptitle() == "frequency 1 (Hz unknown without the dataset)"
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
    assert _colorbar_labels(fig) == {"Re u (data unit)", "|u| (data unit)"}
    titles = _titles(fig)  # row-major: Re u per frequency, then |u|
    assert titles[0] == "Re u at 60 Hz, component 0" and titles[2] == "|u| at 60 Hz, component 0"
    assert maps[0].get_xlabel() == "x (mm)"
    with pytest.raises(ValueError, match="complex"):
        figures.wave_figure(ds.u.real, ds.frequency)


def test_comparison_figure(tmp_path):
    ds = _dataset()
    mu = _fake_result(ds).mu
    fig = figures.comparison_figure({"PINN": mu, "AHI": ds.mu[0] * 1.3}, ds, fig=Figure())
    assert _colorbar_labels(fig) == {"G' (kPa)", "|ΔG'| / |G'_true| (%)"}
    assert _titles(fig)[:3] == [
        "true G' at 60 Hz (kPa)",
        "PINN: G' at 60 Hz (kPa)",
        "AHI: G' at 60 Hz (kPa)",
    ]
    ahi = _map(fig, "AHI: median")
    np.testing.assert_allclose(np.nanmedian(ahi), 30.0, rtol=1e-6)  # 1.3 x the truth
    fig.savefig(tmp_path / "c.png", dpi=80)
    _check_png(tmp_path / "c.png")


def test_loss_figure_is_log_scale_and_handles_empty_history():
    fig = figures.loss_figure(_fake_result(_dataset()).history, fig=Figure())
    assert fig.axes[0].get_yscale() == "log"
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert labels == ["total loss", "data loss", "PDE loss"]
    empty = figures.loss_figure([], fig=Figure())
    assert empty.axes[0].texts


def _batched_history(members=12, blocks=20, seed=0):
    """Records as an ensemble or slicewise run writes them: one value per member."""
    rng = np.random.default_rng(seed)
    return [
        {
            "step": 50 * (i + 1),
            "time_s": 0.1 * i,
            "lr": [1e-3 if i < 10 or m % 3 else 5e-4 for m in range(members)],
            **{k: list(w / (i + 1) * (1 + rng.random(members))) for k, w in terms.items()},
            "retries": [0] * members,
        }
        for i in range(blocks)
        for terms in [{"loss": 1.0, "data": 0.6, "pde": 0.4}]
    ]


def test_loss_figure_of_12_members_has_one_legend_entry_per_term(tmp_path):
    history = _batched_history(12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied ... collapsed"
        fig = figures.loss_figure(history, fig=Figure())
        fig.savefig(tmp_path / "loss.png", dpi=80)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["total loss", "data loss", "PDE loss"]
    assert "12 members" in ax.get_legend().get_title().get_text()
    lines = ax.get_lines()
    assert len(lines) == 3 * 12 + 3  # each member thin, one median per term
    for term, colour in (("loss", "k"), ("data", "C0"), ("pde", "C3")):
        (median,) = [ln for ln in lines if ln.get_label() == figures.LOSSES[term][0]]
        thin = [ln for ln in lines if ln.get_color() == colour and ln is not median]
        assert len(thin) == 12 and all(ln.get_linewidth() < median.get_linewidth() for ln in thin)
        expected = np.median([h[term] for h in history], axis=1)
        np.testing.assert_allclose(median.get_ydata(), expected)
    assert fig.axes[1].get_ylabel() == "learning rate\n(nondimensional)"
    assert ax.get_ylabel() == "loss (nondimensional)" and ax.get_yscale() == "log"


def test_loss_figure_of_many_slices_and_a_diverged_member(tmp_path):
    history = _batched_history(64)
    for h in history[5:]:
        h["loss"][3] = float("nan")  # a member that diverged: no gap in the others
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = figures.loss_figure(history, fig=Figure())
        fig.savefig(tmp_path / "loss.png", dpi=80)
    assert len(fig.axes[0].get_legend().get_texts()) == 3
    _check_png(tmp_path / "loss.png")


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
    assert _colorbar_labels(fig) == {"G' (kPa)", "std of G' (Pa)", "std / |mean| (%)"}
    assert _titles(fig)[0] == "ensemble mean G' at 60 Hz (kPa)"


def test_saving_clears_an_earlier_runs_results_but_not_other_files(tmp_path):
    """An ensemble's uncertainty.png, NIfTI maps and a diverged run's failure.json in OUT
    do not survive a new result saved there; a user's own file does."""
    from helmholtz_pinn.report import files

    out = tmp_path / "run"
    (out / "maps").mkdir(parents=True)
    for name in ("uncertainty.png", "failure.json", "maps/storage_Pa_60Hz.nii.gz", "notes.txt"):
        (out / name).write_text("old")
    removed = files.clear_results(out)
    assert sorted(removed) == ["failure.json", "maps/storage_Pa_60Hz.nii.gz", "uncertainty.png"]
    assert (out / "notes.txt").read_text() == "old" and not (out / "uncertainty.png").exists()


def test_a_three_component_wave_figure_shows_every_component():
    from matplotlib.figure import Figure

    from helmholtz_pinn.io.dataset import example

    ds = example("elastic-two-ellipse-slice")
    fig = figures.wave_figure(ds.u, ds.frequency, spacing=ds.spacing, component=None, fig=Figure())
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == ds.n_comp * ds.n_freq
    assert {t.rsplit("component ", 1)[1] for t in titles} == {"0", "1", "2"}


def _boxes(fig):
    """(owner, window extent) of every drawn element that the layout places: each axes'
    box, title, axis labels and visible tick labels, and the figure's title and caption."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    out = [("figure", t.get_window_extent()) for t in (fig._suptitle, fig._supxlabel) if t]
    for i, ax in enumerate(fig.axes):
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):  # the drawn ticks: those in the view
            lo, hi = sorted(axis.get_view_interval())
            ticks = zip(axis.get_major_ticks(), axis.get_majorticklocs(), strict=False)
            texts += [t for tick, at in ticks if lo <= at <= hi for t in (tick.label1, tick.label2)]
        out.append((i, ax.get_window_extent()))
        out += [(i, t.get_window_extent()) for t in texts if t.get_visible() and t.get_text()]
    return out


@pytest.mark.parametrize("kind", ["modulus", "wave", "comparison", "loss", "misfit", "3-d"])
def test_no_title_label_or_colour_bar_overlaps_another_panel(kind):
    """The fixed layout (no layout engine measures the text): no element of one panel (or
    colour bar) overlaps one of another, or the figure's title or caption, and every one
    lies inside the figure; two-line titles and a caption included."""
    from helmholtz_pinn.io.dataset import example

    ds = _dataset(grid=(10, 12, 5), n_freq=1) if kind == "3-d" else _dataset()
    slab = example("elastic-two-ellipse-slice")
    mu = _fake_result(ds).mu
    fig = {
        "modulus": lambda: figures.modulus_figure(mu, ds, fig=Figure()),
        "3-d": lambda: figures.modulus_figure(mu, ds, fig=Figure()),
        "wave": lambda: figures.wave_figure(
            slab.u, slab.frequency, spacing=slab.spacing, component=None, fig=Figure()
        ),
        "comparison": lambda: figures.comparison_figure(
            {"PINN": mu, "AHI": ds.mu[0] * 1.3}, ds, fig=Figure()
        ),
        "loss": lambda: figures.loss_figure(_batched_history(4), fig=Figure()),
        "misfit": lambda: figures.misfit_figure(
            np.abs(mu / ds.mu - 1),
            ds.frequency,
            spacing=ds.spacing,
            noise=[0.1, 0.1],
            fig=Figure(),
        ),
    }[kind]()
    assert fig.get_layout_engine() is None
    fig.supxlabel("PINN, law voigt, 5000 steps; input a/long/path/to/the/data.npz", fontsize=7.5)
    figures._arrange(fig)
    boxes = _boxes(fig)
    whole = fig.bbox
    for owner, box in boxes:
        assert box.x0 >= whole.x0 - 1 and box.x1 <= whole.x1 + 1, (kind, owner, box)
        assert box.y0 >= whole.y0 - 1 and box.y1 <= whole.y1 + 1, (kind, owner, box)
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if a != b:
                assert not box_a.padded(-1).overlaps(box_b), (kind, a, b, box_a, box_b)
