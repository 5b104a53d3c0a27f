"""scripts/sweep.py: the members span the issue's data space, tuning and held-out members
differ, the quick subset is the failure classes, and the tiny mode runs end to end on a
CPU (simulate, fit, baselines, checks, report)."""

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sweep.py"


def _script():
    sys.path.insert(0, str(SCRIPT.parent))  # its sibling study_report, as when run
    spec = importlib.util.spec_from_file_location("sweep_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_members_span_the_data_space():
    sweep = _script()
    full = sweep.members()
    assert {m.voxel_mm for m in full} >= {1.0, 3.5}
    assert min(m.voxels for m in full) == 6 and max(m.voxels for m in full) == 20
    grids = [m.grid for m in full]
    assert (24, 24) in grids and (128, 128) in grids
    assert {m.slices for m in full} >= {0, 3, 48}  # 0: one slice, stored as 2-D
    assert {m.components for m in full} >= {"xyz", "xy", "z", "1", "2"}
    assert {len(m.fit_frequencies or m.frequencies) for m in full} == {1, 2, 3}
    assert {m.law for m in full} == {"voigt", "springpot"}
    assert {m.noise_db for m in full} == {None, -20.0, -10.0}
    tuning = {m.name.removeprefix("tuning-"): m for m in full if m.split == "tuning"}
    for m in (m for m in full if m.split == "heldout"):
        twin = tuning[m.name.removeprefix("heldout-")]
        assert twin.seed != m.seed and twin._replace(seed=m.seed, name=m.name, split=m.split) == m
    quick = sweep.members("quick")
    assert len(quick) == 6 and all(m.split == "heldout" for m in quick)
    assert {m.cls for m in quick} >= {
        "volume, 3 comp., -20 dB",
        "slice of 3-D motion, 3 comp., clean",
        "volume, one frequency, 1 through-plane comp., clean",
    }


def test_the_tiny_sweep_runs_and_reports(tmp_path):
    sweep = _script()
    records = tmp_path / "r.jsonl"
    args = ["run", "--tiny", "--members", "tiny-plane", "--records", str(records)]
    assert sweep.main([*args, "--data", str(tmp_path / "data")]) == 0
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["method"] for r in rows] == ["defaults", "ahi-smoothed"]  # no curl for C = 1
    pinn = rows[0]
    assert pinn["class"] == "scalar 2-D, one frequency, 1 comp., -20 dB"
    assert 0 <= pinn["storage"] < 10 and isinstance(pinn["checks_failed"], list)
    assert abs(pinn["voxels_from_u"] / pinn["voxels_true"] - 1) < 0.1
    assert (tmp_path / "data" / "tiny-plane.npz").exists()  # cached for the next run
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert sweep.main(["report", str(records)]) == 0
    text = printed.getvalue()
    assert "| scalar 2-D, one frequency, 1 comp., -20 dB | 1 |" in text
    assert "far off (G' > 2x its class median or > 15 %)" in text


def test_flag_rates_count_far_off_and_good_members():
    sweep = _script()
    group = [
        {"storage": 0.04, "checks_failed": []},
        {"storage": 0.05, "checks_failed": ["resolution"]},  # good, warned
        {"storage": 0.06, "checks_failed": []},
        {"storage": 0.07, "checks_failed": []},  # the class median is 0.065
        {"storage": 0.30, "checks_failed": ["wave_modulus"]},  # far off, flagged
        {"storage": 0.20, "checks_failed": []},  # far off, silent
    ]
    rates = sweep.flag_rates([group])
    assert rates == dict(far=2, far_flagged=1, good=3, good_warned=1)


def test_classical_and_law_rates_count_worse_maps_and_wrong_laws():
    """A member above the better classical map counts as worse (flagged or silent, by
    name); one below both, or with no classical map, does not; a law other than the
    tissue's counts as wrong, and as said determined where the record says so."""
    sweep = _script()
    base = {
        ("a", "ahi-smoothed"): {"storage": 0.10}, ("a", "curl-mdev"): {"storage": 0.08},
        ("b", "ahi-smoothed"): {"storage": 0.10}, ("c", "ahi-smoothed"): {"storage": 0.30},
    }  # fmt: skip
    rows = [
        {"member": "a", "storage": 0.09, "checks_failed": ["slice_axis"]},  # worse, flagged
        {"member": "b", "storage": 0.12, "checks_failed": []},  # worse, silent
        {"member": "c", "storage": 0.20, "checks_failed": []},  # better
        {"member": "d", "storage": 0.50, "checks_failed": []},  # no classical map
    ]
    rates = sweep.classical_rates(rows, base)
    assert rates == dict(of=3, worse=2, worse_flagged=1, silent=["b"])
    tissue = {"member_facts": {"law": "voigt"}}
    laws = [
        {**tissue, "law": {"mu_model": "voigt", "determined": True}},
        {**tissue, "law": {"mu_model": "springpot", "determined": True}},
        {**tissue, "law": {"mu_model": "springpot", "determined": False}},
        {**tissue, "law": {"mu_model": "per-frequency"}},  # one frequency: not judged
    ]
    assert sweep.law_rates(laws) == dict(judged=3, wrong=2, wrong_determined=1)


def test_other_map_rates_compare_the_kept_map_with_the_other_laws():
    """Where both laws' maps were scored, the kept map counts as the better one where its
    G' error is the lower, and the sums are in points; rows without the other map's
    error are left out."""
    sweep = _script()

    def other(err):
        return {"law": {"other": {"mu_model": "voigt", "median_rel_error_storage": err}}}

    rows = [
        {"storage": 0.10, **other(0.20)},  # kept the better
        {"storage": 0.30, **other(0.10)},  # kept the worse
        {"storage": 0.05, "law": {"other": {"mu_model": "voigt"}}},  # no ground truth
        {"storage": 0.05, "law": {"mu_model": "voigt"}},  # one fit
    ]
    rates = sweep.other_map_rates(rows)
    assert rates["pairs"] == 2 and rates["kept_better"] == 1
    assert round(rates["kept_sum"], 9) == 40.0 and round(rates["best_sum"], 9) == 20.0
