"""scripts/scaling.py on conftest's 4 host CPU devices: the timed programs run, and real
fits on 4 devices agree with one device.

Tolerance: both multi-device paths compute the single-device math, the members exactly
(each member's program is unchanged; batched matmuls may tile differently) and the
full-batch data parallel up to summation order, so after 20 steps the final maps agree
to float32 rounding (measured 2.3e-7 max relative on 2 and 4 devices; asserted 1e-4).
"""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RTOL = 1e-4


def load_script():
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "scripts" / "scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore:fit quality")  # 20-step fits are not converged
def test_quick_run_on_four_devices_agrees_with_one(tmp_path, capsys, four_devices):
    """Members split across 4 devices (S = 8 slices of 8x8) and a data-parallel 6^3
    volume (216 voxels, 54 per device), timed (strong and weak) and then fitted for 20
    steps through ``invert(..., devices=D)`` on 4 devices and on 1. The sizes are chosen
    so that the fits reuse the timed programs (4 compilations in all)."""
    jsonl = tmp_path / "scaling.jsonl"
    argv = ["--quick", "--device-counts", "4", "--members", "8", "--members-per-device", "2"]
    argv += ["--slice-n", "8", "--frequencies", "60", "--volumes", "6", "--volume-batch", "216"]
    argv += ["--batch-per-device", "54", "--blocks", "1", "--agreement"]
    argv += ["--agreement-steps", "20", "--agreement-volume", "6", "--jsonl", str(jsonl)]
    assert load_script().main(argv) == 0
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]

    timed = {(r["what"], r["mode"]): r for r in rows if "mode" in r}
    assert set(timed) == {(w, m) for w in ("slices", "volume") for m in ("strong", "weak")}
    for r in timed.values():
        assert r["devices"] == 4 and r["us_per_step"] > 0 and "error" not in r
    assert timed["slices", "weak"]["members"] == 8  # S0 = 2 per device
    assert timed["volume", "strong"]["full_batch"]  # B = all 216 voxels

    agree = {r["case"]: r for r in rows if r["what"] == "agreement"}
    assert agree["slices"]["parallel"] == "members" and agree["slices"]["members"] == 8
    assert agree["volume"]["parallel"] == "data-parallel"
    for r in agree.values():
        assert r["devices"] == 4 and r["steps"] == r["steps_1"] == 20
        assert r["max_rel_mu"] < RTOL and r["rel_loss"] < RTOL

    out = capsys.readouterr().out
    for title in ("Batched slices, strong", "Batched slices, weak", "One volume, data parallel"):
        assert title in out
    assert "Agreement of the final results" in out


def test_device_counts_must_be_visible():
    script = load_script()
    with pytest.raises(SystemExit, match="only"):
        script.device_counts(script.parse_args(["--device-counts", "1", "99"]))
    with pytest.raises(SystemExit):
        script.parse_args(["--device-counts", "2", "--devices", "2"])
    args = script.parse_args(["--quick", "--volume-batch", "128"])
    assert args.volume_batch == [128] and args.batch_per_device == (64,)
    assert script.device_counts(script.parse_args(["--devices", "all"])) == [None]
