"""A cohort (``helmholtz_pinn.fit.cohort.run_cohort``, ``helmholtz-pinn cohort``): every
file is fitted exactly once, over shards and worker processes; a killed run resumes
without refitting finished files; the maps equal the files fitted one by one with
``invert`` bit for bit (CPU, same seed: a small fit runs on one device whichever worker
holds it, so the program is the same); a file that fails is a row, not the end.

Tiny fits (12 x 12 voxels, 10 steps, networks 16 x 2 / 8 x 1): most of the time is the
start-up compilation of each process (this one and two workers) and the figures.
"""

import csv
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.cli import commands, parser
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, Interrupted
from helmholtz_pinn.fit import cohort, inversion
from helmholtz_pinn.io import dataset as datasets

CFG = Config().replace(**SMALL)
STEMS = ("a", "b", "c")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three plane-wave datasets (storage moduli 2.5, 3 and 3.5 kPa)."""
    folder = tmp_path_factory.mktemp("data")
    paths = []
    for stem, g in zip(STEMS, (2500.0, 3000.0, 3500.0), strict=True):
        datasets.save(plane_wave_dataset(n=12, g=g), folder / f"{stem}.npz")
        paths.append(folder / f"{stem}.npz")
    return paths


@pytest.fixture(scope="module")
def one_by_one(files):
    """The maps of each file fitted alone with ``invert`` in this process."""
    return {p.stem: inversion.invert(datasets.load(p), CFG, progress=False).mu for p in files}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compilation cache for the processes started here."""
    return tmp_path_factory.mktemp("cache")


def _table(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _assert_maps(root, one_by_one, stems=STEMS):
    for stem in stems:
        mu = np.load(root / stem / "mu.npz")["mu"]
        np.testing.assert_array_equal(mu, one_by_one[stem], err_msg=stem)


@pytest.mark.parametrize("n_files, n", [(4, 2), (7, 3), (2, 5)])
def test_shards_take_every_file_once(n_files, n):
    taken = [k for i in range(n) for k in cohort.shard_files(n_files, (i, n))]
    assert sorted(taken) == list(range(n_files))


def test_two_shards_fit_each_file_once_and_a_failure_is_a_row(files, one_by_one, tmp_path):
    """Shards 0/2 and 1/2 into one root (in this process) fit each file once, with the
    one-by-one maps; a missing file fails its row only; a third run without --shard
    refits nothing and tables every file."""
    root = tmp_path / "root"
    inputs = [*files, tmp_path / "missing.npz"]  # index 3: shard 1
    seen = []
    for i in (0, 1):
        rows = cohort.run_cohort(
            inputs, root, CFG, shard=(i, 2), workers=1, progress=False, on_file=seen.append
        )
        assert {r["file"] for r in rows} == {str(p) for p in inputs[i::2]}
        assert (root / f"cohort-{i}of2.csv").is_file()
    assert sorted(r["file"] for r in seen) == sorted(map(str, inputs))  # each file once
    statuses = {r["file"]: r["status"] for r in seen}
    assert statuses.pop(str(inputs[3])) == "failed"
    assert set(statuses.values()) == {"ok"}
    failure = next(r for r in seen if r["status"] == "failed")["error"]
    assert failure.startswith("DatasetError: no such file") and str(inputs[3]) in failure
    assert (root / "missing" / "failure.json").is_file()
    _assert_maps(root, one_by_one)

    written = {s: (root / s / "mu.npz").stat().st_mtime_ns for s in STEMS}
    rows = cohort.run_cohort(inputs, root, CFG, workers=1, progress=False)
    assert {s: (root / s / "mu.npz").stat().st_mtime_ns for s in STEMS} == written
    table = _table(root / "cohort.csv")
    assert table == [{k: str(v) for k, v in r.items()} for r in rows]
    by_file = {}
    for r in table:  # one row per file and frequency
        by_file.setdefault(r["file"], []).append(r)
    assert list(by_file) == [str(p) for p in inputs]
    for p in files:  # the table holds the medians of each map (every voxel is in the mask)
        assert [r["status"] for r in by_file[str(p)]] == ["skipped", "skipped"]
        assert [float(r["frequency_hz"]) for r in by_file[str(p)]] == [60.0, 90.0]
        for r, mu in zip(by_file[str(p)], one_by_one[p.stem], strict=True):
            phase = np.degrees(np.median(np.arctan2(mu.imag, mu.real)))
            assert float(r["storage_pa"]) == pytest.approx(np.median(mu.real), rel=1e-5)
            assert float(r["loss_pa"]) == pytest.approx(np.median(mu.imag), rel=1e-5)
            assert float(r["phase_deg"]) == pytest.approx(phase, rel=1e-5)
            assert r["law"] == "voigt"
            fired = json.loads((root / p.stem / "metrics.json").read_text())["fit_quality"]
            fired = [c["name"] for c in fired if not c["passed"]]
            assert r["checks_fired"] == ";".join(fired)
            assert r["fit_checks"] == ("fail" if fired else "pass")
    assert by_file[str(inputs[3])][0]["status"] == "failed"


def test_two_workers_give_the_one_by_one_maps(files, one_by_one, cache, tmp_path, capsys):
    """Two worker processes, each pinned to two of the four CPU devices, share three files;
    each file is fitted by one worker, and the maps are the one-by-one maps."""
    root = tmp_path / "root"
    rows = cohort.run_cohort(files, root, CFG, workers=2, cache_dir=cache)
    fitted = {r["file"]: r for r in rows}
    assert list(fitted) == [str(p) for p in files]
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["worker"] for r in rows} <= {0, 1}
    said = capsys.readouterr().err
    assert "on 2 workers (devices 0,1; 2,3)" in said and "[3/3]" in said
    _assert_maps(root, one_by_one)


def test_a_stopped_cohort_resumes_without_refitting_finished_files(
    files, one_by_one, tmp_path, monkeypatch
):
    """Ctrl-C (a real SIGINT) in the second file's fit, after its first block: the fit
    writes its checkpoint and the cohort stops with its table (b, c pending). The same
    run again skips a (its result untouched), resumes b from its checkpoint and fits c,
    to the one-by-one maps."""
    root = tmp_path / "root"
    invert, calls = inversion.invert, []

    def stopped_in_the_second(data, config, **kwargs):
        calls.append(kwargs["checkpoint_dir"])
        if len(calls) == 2:
            kwargs["callback"] = lambda record: os.kill(os.getpid(), signal.SIGINT)
        return invert(data, config, **kwargs)

    monkeypatch.setattr(inversion, "invert", stopped_in_the_second)
    with pytest.raises(Interrupted, match="with 1 of 3 files done"):
        cohort.run_cohort(files, root, CFG, workers=1, progress=False)
    table = _table(root / "cohort.csv")
    assert [r["status"] for r in table] == ["ok", "ok", "pending", "pending"]
    assert [c.parent.name for c in calls] == ["a", "b"]
    kept = (root / "a" / "mu.npz").stat().st_mtime_ns
    monkeypatch.setattr(inversion, "invert", invert)

    rows = cohort.run_cohort(files, root, CFG, workers=1, progress=False)
    assert [r["status"] for r in rows[::2]] == ["skipped", "ok", "ok"]
    assert (root / "a" / "mu.npz").stat().st_mtime_ns == kept
    facts = json.loads((root / "b" / "metrics.json").read_text())
    assert facts["resumed_from_step"] == SMALL["sync_interval"]
    _assert_maps(root, one_by_one)


def test_the_command_calls_run_cohort_and_exits_1_when_a_file_failed(monkeypatch, tmp_path):
    got = {}

    def fake(inputs, out_root, config, **options):
        got.update(inputs=inputs, out_root=out_root, config=config, **options)
        return [{"file": "x.npz", "status": "failed"}, {"file": "y.npz", "status": "ok"}]

    monkeypatch.setattr(cohort, "run_cohort", fake)
    argv = ["cohort", "x.npz", "y.npz", "--out", str(tmp_path), "--shard", "1/3"]
    assert commands.main([*argv, "--workers", "2", "--steps", "7", "--seed", "4"]) == 1
    assert got["inputs"] == [Path("x.npz"), Path("y.npz")] and got["out_root"] == tmp_path
    assert got["config"] == Config().replace(steps=7, seed=4)
    assert (got["shard"], got["workers"], got["checkpoints"]) == ((1, 3), 2, True)


@pytest.mark.parametrize(
    "workers, files, pins",
    [
        (None, 8, ["4", "5", "6", "7"]),  # one worker per GPU
        (2, 8, ["4,5", "6,7"]),  # each worker its share
        (None, 3, ["4", "5", "6,7"]),  # never more workers than files: near-equal shares
        (None, 1, [None]),  # one file: fitted in this process, nothing pinned
    ],
)
def test_each_gpu_worker_is_pinned_to_its_own_gpus(monkeypatch, workers, files, pins):
    """Under CUDA_VISIBLE_DEVICES=4,5,6,7 (4 GPUs), the worker pins name those GPUs."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    monkeypatch.setattr(cohort, "_local_devices", lambda: ("gpu", 4))
    groups = cohort._device_groups(workers, files)
    if pins == [None]:
        assert groups == [{"platform": None, "ids": []}]
        return
    assert [cohort._pinned(g)["CUDA_VISIBLE_DEVICES"] for g in groups] == pins
    with pytest.raises(ConfigError, match="only 4 local gpu"):
        cohort._device_groups(5, 8)


@pytest.mark.parametrize("shard", ["2/2", "1", "3/2", "a/b"])
def test_a_bad_shard_is_a_usage_error(shard, capsys):
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["cohort", "x.npz", "--out", "o", "--shard", shard])
    assert stop.value.code == 2 and "expected I/N" in capsys.readouterr().err
