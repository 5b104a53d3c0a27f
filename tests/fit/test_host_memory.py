"""The results must fit the host: a fit whose maps on the full grid exceed the host's
available memory is refused before any training, with one line naming the grid, the
bytes needed and available and what to do; the estimate counts the arrays a run holds."""

import dataclasses
import tracemalloc

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset, plane_wave_slices

from helmholtz_pinn.cli import commands as cli
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DeviceMemoryError
from helmholtz_pinn.fit import admission, chunks, inversion, memory
from helmholtz_pinn.io import dataset as data
from helmholtz_pinn.report import result as report

CFG = Config(**SMALL)
pytestmark = pytest.mark.filterwarnings(
    "ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning"
)
TINY = ["--width", "16", "--depth", "2", "--mu-width", "8", "--mu-depth", "1"]
TINY += ["--n-features", "8", "--batch-size", "64", "--pde-warmup", "3", "--no-progress"]


def _no_training(*args, **kwargs):
    raise AssertionError("a refused fit must not train")


def test_results_larger_than_the_host_are_refused_before_training(monkeypatch):
    monkeypatch.setattr(chunks, "fit_members", _no_training)
    monkeypatch.setattr(memory, "available_host_memory", lambda: 100 * 2**10)
    d = plane_wave_dataset(n=12)
    with pytest.raises(DeviceMemoryError) as refused:
        inversion.invert(d, CFG, progress=False, ensemble=3)
    need = admission.check_results_fit(d, CFG.replace(ensemble=3), available=2**30)
    assert str(refused.value) == (
        "the results of this fit (grid 12 x 12, 2 frequencies, 2 components, an ensemble of "
        f"3: maps on every voxel of the grid) need {need / 2**10:.1f} KiB of host memory, but "
        "the host has 100.0 KiB available (at most 80% may be used); crop the data to the "
        "mask's bounding box, fit fewer frequencies (or a smaller ensemble or batch), fit a "
        "volume in slabs of z-slices in separate runs, or use a machine with more memory"
    )


def test_the_command_line_refuses_with_one_line_and_exit_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(chunks, "fit_members", _no_training)
    monkeypatch.setattr(memory, "available_host_memory", lambda: 100 * 2**10)
    path = data.save(plane_wave_dataset(n=12), tmp_path / "d.npz")
    out = tmp_path / "run"
    assert cli.main(["invert", str(path), "--out", str(out), *TINY, "--ensemble", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "helmholtz-pinn invert: error: the results of this fit (grid 12 x 12, 2 frequencies, "
        "2 components, an ensemble of 3: maps on every voxel of the grid) need "
    )
    assert "but the host has 100.0 KiB available" in err and not out.exists()


def test_an_ordinary_fit_passes_and_an_unknown_memory_is_not_checked(monkeypatch):
    d = plane_wave_dataset(n=12)
    need = admission.check_results_fit(d, CFG)  # this host's available memory
    assert 0 < need == admission.check_results_fit(d, CFG, available=2 * need)
    monkeypatch.setattr(memory, "available_host_memory", lambda: None)
    assert admission.check_results_fit(d, CFG.replace(ensemble=10**8)) > 2**40  # not checked
    assert admission.check_results_fit("not a dataset", CFG) is None  # invert's checks answer


def _held_arrays(monkeypatch) -> list:
    """A list that collects the nbytes of the arrays a run keeps: each member's maps,
    the u / s copies of the data (unit_amplitude)."""
    held = []
    maps, scale = chunks._maps, admission.unit_amplitude

    def spy_maps(*args):
        mus, u_fit, law = maps(*args)
        held.extend([mus.nbytes, u_fit.nbytes])
        return mus, u_fit, law

    def spy_scale(dataset):
        scaled, s = scale(dataset)
        held.append(scaled.u.nbytes if s != 1.0 else 0)
        return scaled, s

    monkeypatch.setattr(chunks, "_maps", spy_maps)
    monkeypatch.setattr(admission, "unit_amplitude", spy_scale)
    return held


@pytest.mark.parametrize("kind", ["batch of 2, ensemble of 2", "slicewise"])
def test_the_estimate_counts_the_arrays_a_run_holds(kind, monkeypatch):
    """The run's result arrays (members' maps, u / s, mu, mu_std, u_fit and u in the
    data's unit), summed from their nbytes, equal :func:`admission.result_bytes` to within
    10 % (u of amplitude 3: scaled by s = 4, so every copy is made)."""
    held = _held_arrays(monkeypatch)
    slicewise = kind == "slicewise"
    if slicewise:
        d = plane_wave_slices(n=12)
        d, run = dataclasses.replace(d, u=d.u * 3), dict(slicewise=True)
        given, cfg = d, CFG
    else:
        d = plane_wave_dataset(n=12)
        d = dataclasses.replace(d, u=d.u * 3)
        given, run, cfg = [d, d], {}, CFG.replace(ensemble=2)
    results = inversion.invert(given, cfg, progress=False, **run)
    for r in results if isinstance(results, list) else [results]:
        assert r.dataset.u is not d.u  # the data's unit: a copy
        held += [r.mu.nbytes, r.u_fit.nbytes, r.dataset.u.nbytes]
        held += [0 if r.mu_std is None else r.mu_std.nbytes]
    expected = admission.result_bytes(
        d.grid,
        d.n_freq,
        d.n_comp,
        ensemble=cfg.ensemble,
        datasets=1 if slicewise else 2,
        slicewise=slicewise,
        u_itemsize=d.u.itemsize,
    )
    assert sum(held) == pytest.approx(expected, rel=0.1)


def test_building_a_result_needs_the_stated_passing_bytes():
    """The wave misfit summary, the largest passing need of a Result, peaks (tracemalloc)
    between half and all of :func:`admission.building_bytes`."""
    d = plane_wave_dataset(n=96)
    u_fit = d.u * 1.01
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        report.misfit_summary(u_fit, d, np.ones(d.grid, bool))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    stated = admission.building_bytes(d.grid, d.n_freq, d.n_comp)
    assert 0.5 * stated < peak <= stated


def test_auto_holds_both_laws_results():
    d = plane_wave_dataset(n=12)
    one = admission.check_results_fit(d, CFG, available=2**40)
    both = admission.check_results_fit(d, CFG.replace(mu_model="auto"), available=2**40)
    passing = admission.building_bytes(d.grid, d.n_freq, d.n_comp)
    assert both - passing == 2 * (one - passing)
