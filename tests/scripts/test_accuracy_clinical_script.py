"""scripts/accuracy_clinical.py's records and report: what a fit's metrics become, and a
viscosity-only target read on G'' (no fit: hand-made metrics)."""

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "accuracy_clinical.py"

FACTS = {  # a Voigt member's metrics as invert() writes them (values made up)
    "median_rel_error_storage": 0.054,
    "median_rel_error_loss": 0.34,
    "pearson_r_storage": 0.84,
    "contrast_transfer": {"2": 0.71, "3": 0.39, "4": None},
    "contrast_transfer_loss": {"2": 0.57, "3": None, "4": 0.5},
    "law_spread": 0.0008,
    "fit_quality": [{"name": "law_consistency", "passed": True}],
    "steps": 5000,
}


def _script():
    sys.path.insert(0, str(SCRIPT.parent))  # its sibling study_report, as when run
    spec = importlib.util.spec_from_file_location("accuracy_clinical_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_record_keeps_both_contrasts_and_the_report_reads_the_viscous_target_on_g2(tmp_path):
    script = _script()
    row = script.record("heldout-voigt", None, "pinn-voigt", FACTS, 12.3)
    assert row["contrast"] == FACTS["contrast_transfer"]
    assert row["contrast_loss"] == FACTS["contrast_transfer_loss"]
    assert script.contrasts(row) == "0.71 / 0.39 / G'' 4: 0.50"
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps(row) + "\n")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert script.report(SimpleNamespace(records=[records])) == 0
    line = printed.getvalue().splitlines()[-1]
    assert "| heldout-voigt | clean | pinn-voigt | 5.4 % | 34.0 % | 0.840 |" in line
    assert "0.71 / 0.39 / G'' 4: 0.50" in line
