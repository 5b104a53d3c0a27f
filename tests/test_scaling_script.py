"""scripts/scaling.py on conftest's host CPU devices: strong and weak records on 1 and 2
devices, efficiencies, and the 1-vs-2-device agreement of real fits.

Tolerance: both multi-device paths compute the single-device math, the members exactly
(each member's program is unchanged) and the full-batch data parallel up to summation
order, so after 100 steps the final maps agree to float32 rounding (measured ~5e-7
relative; asserted 1e-4).
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-4


def load_script():
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "scripts" / "scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_device_counts_must_be_visible():
    script = load_script()
    with pytest.raises(SystemExit, match="only"):
        script.device_counts(script.parse_args(["--device-counts", "1", "99"]))
    with pytest.raises(SystemExit):
        script.parse_args(["--device-counts", "2", "--devices", "2"])
    args = script.parse_args(["--quick", "--volume-batch", "128"])
    assert args.volume_batch == [128] and args.batch_per_device == (64,)
    assert script.device_counts(script.parse_args(["--devices", "all"])) == [None]
