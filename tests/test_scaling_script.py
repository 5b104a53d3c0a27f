"""scripts/scaling.py on conftest's host CPU devices: strong and weak records on 1 and 2
devices, efficiencies, and the 1-vs-2-device agreement of real fits.

Tolerance: both multi-device paths compute the single-device math, the members exactly
(each member's program is unchanged) and the full-batch data parallel up to summation
order, so after 100 steps the final maps agree to float32 rounding (measured ~5e-7
relative; asserted 1e-4).
"""

import importlib.util
import json
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-4


def load_script():
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "scripts" / "scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(jax.device_count() < 2, reason="needs 2 devices (conftest's XLA_FLAGS)")
def test_quick_strong_weak_and_agreement_on_two_devices(tmp_path, capsys):
    """Tiny sizes: 3 timed programs each for slices and the volume, 4 agreement fits."""
    jsonl = tmp_path / "scaling.jsonl"
    argv = ["--quick", "--device-counts", "1", "2", "--members", "4", "--members-per-device"]
    argv += ["2", "--slice-n", "8", "--frequencies", "60", "--volumes", "6", "--volume-batch"]
    argv += ["216", "--batch-per-device", "64", "--blocks", "1", "--agreement"]
    argv += ["--agreement-steps", "100", "--agreement-volume", "6", "--jsonl", str(jsonl)]
    assert load_script().main(argv) == 0
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]

    def pick(what, mode):
        return {r["devices"]: r for r in rows if r["what"] == what and r.get("mode") == mode}

    strong, weak = pick("slices", "strong"), pick("slices", "weak")
    assert sorted(strong) == sorted(weak) == [1, 2]
    assert [strong[d]["members"] for d in (1, 2)] == [4, 4]
    assert [weak[d]["members"] for d in (1, 2)] == [2, 4]
    assert [weak[d]["members_per_device"] for d in (1, 2)] == [2, 2]
    # S = 4 on 2 devices is one measurement, reported under both modes
    assert strong[2]["us_per_step"] == weak[2]["us_per_step"]
    for group in (strong, weak):  # E = t(1) W(2) / (2 t(2) W(1))
        one, two = group[1], group[2]
        expected = one["us_per_step"] * two["members"] / (2 * two["us_per_step"] * one["members"])
        assert two["efficiency"] == pytest.approx(expected)
        assert one["efficiency"] == 1.0 and two["baseline_devices"] == 1

    vstrong, vweak = pick("volume", "strong"), pick("volume", "weak")
    assert sorted(vstrong) == sorted(vweak) == [1, 2]
    got = [(r["batch"], r["batch_per_device"], r["full_batch"]) for r in vstrong.values()]
    assert got == [(216, 216, True), (216, 108, True)]
    got = [(r["batch"], r["batch_per_device"], r["full_batch"]) for r in vweak.values()]
    assert got == [(64, 64, False), (128, 64, False)]
    assert vweak[2]["efficiency"] == pytest.approx(
        vweak[1]["us_per_step"] / vweak[2]["us_per_step"]
    )
    assert "predict_s" in vstrong[1]

    agree = {r["case"]: r for r in rows if r["what"] == "agreement"}
    assert agree["slices"]["members"] == 4 and agree["volume"]["parallel"] == "data-parallel"
    for r in agree.values():
        assert r["devices"] == 2 and r["steps"] == r["steps_1"] == 100
        assert r["max_rel_mu"] < RTOL and r["median_rel_mu"] <= r["max_rel_mu"]
        assert r["rel_loss"] < RTOL

    out = capsys.readouterr().out
    for title in ("Batched slices, strong", "Batched slices, weak", "One volume, data parallel"):
        assert title in out
    assert "efficiency vs 1 dev." in out and "Agreement of the final results" in out


def test_device_counts_must_be_visible():
    script = load_script()
    with pytest.raises(SystemExit, match="only"):
        script.device_counts(script.parse_args(["--device-counts", "1", "99"]))
    with pytest.raises(SystemExit):
        script.parse_args(["--device-counts", "2", "--devices", "2"])
    args = script.parse_args(["--quick", "--volume-batch", "128"])
    assert args.volume_batch == [128] and args.batch_per_device == (64,)
    assert script.device_counts(script.parse_args(["--devices", "all"])) == [None]
