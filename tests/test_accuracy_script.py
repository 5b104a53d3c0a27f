"""Smoke test of scripts/accuracy.py: a --quick run writes the report, the numbers and the
figure, prints one JSON line per cell, and --report-only rebuilds the report from them."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accuracy.py"
PHANTOM = "four-target"
NOISE = [None, -20.0]  # clean and -20 dB: both kinds of target are evaluated


def _load_script():
    spec = importlib.util.spec_from_file_location("accuracy_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    """The script as a module, for its report functions (nothing compiled in-process)."""
    return _load_script()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One --quick run in a subprocess (4 tiny PINN fits, 4 AHI maps; its own compilation
    cache, so the second noise level reuses the first's programs): (out folder, stdout)."""
    tmp = tmp_path_factory.mktemp("accuracy")
    out = tmp / "out"
    cmd = [
        sys.executable,
        str(SCRIPT),
        "--quick",
        "--phantoms",
        PHANTOM,
        "--noise",
        "clean",
        "-20",
        "--out",
        str(out),
        "--compile-cache",
        str(tmp / "cache"),
    ]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "MPLBACKEND": "Agg"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def test_json_has_every_cell_with_finite_numbers(script, quick_run):
    out, _ = quick_run
    study = json.loads((out / "accuracy.json").read_text())
    assert study["meta"]["complete"] is True and study["meta"]["quick"] is True
    cells = {(r["phantom"], r["noise_db"], r["method"]) for r in study["results"]}
    assert cells == {(PHANTOM, n, m) for n in NOISE for m in script.METHODS}
    assert len(study["results"]) == len(cells)
    for r in study["results"]:
        assert "error" not in r, r
        for key in ("median_rel_error_storage", "pearson_r_storage", "wall_time_s"):
            assert _finite(r[key]), (r["method"], key, r[key])
        assert set(r["contrast_transfer"]) == {"2", "3", "4", "5"}  # the four disks
        assert all(_finite(v) for v in r["contrast_transfer"].values())
    info = study["phantoms"][PHANTOM]
    assert info["shape"] == [40, 50] and info["region_voxels"]["2"] > info["region_voxels"]["3"]
    assert study["meta"]["machine"]["devices"]
    assert "scripts/accuracy.py --quick" in study["meta"]["command"]


def test_markdown_has_the_tables_targets_and_provenance(script, quick_run):
    out, _ = quick_run
    md = (out / "accuracy.md").read_text()
    assert f"## {PHANTOM}" in md
    for line in ("- Date: ", "- Machine: JAX ", f"- Command: `python {SCRIPT} --quick"):
        assert line in md
    table = [ln for ln in md.splitlines() if ln.startswith(("| clean |", "| -20 dB |"))]
    assert len(table) == len(NOISE) * len(script.METHODS)
    for method in script.METHODS:
        assert sum(f"| {script.LABELS[method]} |" in ln for ln in table) == len(NOISE)
    assert all(ln.count(" %") >= 5 for ln in table)  # error and four contrasts, in %
    # Targets: three clean and two -20 dB lines per PINN form, each with a verdict.
    verdicts = [ln for ln in md.splitlines() if ln.endswith(("| met |", "| NOT met |"))]
    assert len(verdicts) == 2 * 5
    assert "contrast of the two largest targets (regions 2, 3)" in md
    assert "the AHI error on the same file" in md


def test_figure_is_written(quick_run):
    out, _ = quick_run
    png = out / "figures" / f"accuracy_{PHANTOM}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stdout_lines_rebuild_the_report(script, quick_run, tmp_path):
    """Each cell is one JSON line on stdout; --report-only turns a log cut short into
    the report of the cells that finished."""
    out, stdout = quick_run
    records = [json.loads(ln) for ln in stdout.splitlines() if ln.startswith("{")]
    assert "meta" in records[0]
    rows = [r for r in records if "method" in r]
    assert len(rows) == len(NOISE) * len(script.METHODS)

    log = tmp_path / "full.log"
    log.write_text(stdout)
    assert script.main(["--report-only", str(log), "--out", str(tmp_path / "full")]) == 0
    rebuilt = (tmp_path / "full" / "accuracy.md").read_text()
    original = (out / "accuracy.md").read_text()
    assert rebuilt.split("## ", 1)[1] == original.split("## ", 1)[1]  # same tables
    assert "Report regenerated from the saved numbers" in rebuilt
    assert "Incomplete run" not in rebuilt

    lines = stdout.splitlines()
    last = max(i for i, ln in enumerate(lines) if '"method"' in ln)
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(lines[:last]) + "\n" + lines[last][:40])  # killed mid-line
    assert script.main(["--report-only", str(cut), "--out", str(tmp_path / "cut")]) == 0
    partial = json.loads((tmp_path / "cut" / "accuracy.json").read_text())
    assert len(partial["results"]) == len(rows) - 1
    assert "Incomplete run" in (tmp_path / "cut" / "accuracy.md").read_text()

    # the missing cell from a second run: merged, the study is whole again
    rest = tmp_path / "rest.log"
    rest.write_text("\n".join([lines[0], lines[last]]))  # its meta line and the cell
    assert script.main(["--report-only", str(cut), str(rest), "--out", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "accuracy.json").read_text())
    assert len(merged["results"]) == len(rows) and merged["meta"]["complete"] is True
    assert (tmp_path / "m" / "accuracy.md").read_text().split("## ", 1)[1] == original.split(
        "## ", 1
    )[1]


def _row(noise_db, method, err, r=0.95, contrast=None, **extra):
    return {
        "phantom": "p",
        "noise_db": noise_db,
        "noise": "x",
        "method": method,
        "median_rel_error_storage": err,
        "pearson_r_storage": r,
        "contrast_transfer": contrast or {"2": 0.9, "3": 0.85, "4": 0.1},
        "wall_time_s": 1.0,
        **extra,
    }


def test_targets_against_known_answers(script):
    """Hand-made numbers: the verdicts follow the issue's thresholds; the contrast target
    uses the two largest regions (2 and 4 here, by voxels); a failed fit is reported."""
    study = {
        "meta": {"complete": True},
        "phantoms": {"p": {"region_voxels": {"1": 900, "2": 50, "3": 5, "4": 20}}},
        "results": [
            _row(None, "pinn-helmholtz", 0.03, contrast={"2": 0.9, "3": 0.1, "4": 0.8}),
            _row(None, "pinn-hetero", 0.06, r=0.85, contrast={"2": 0.9, "3": 0.9, "4": 0.5}),
            _row(-20.0, "pinn-helmholtz", 0.10),
            {
                "phantom": "p",
                "noise_db": -20.0,
                "noise": "-20 dB",
                "method": "pinn-hetero",
                "error": "loss diverged at step 0",
            },
            _row(-20.0, "ahi", 0.50),
            _row(-20.0, "ahi-gaussian", 0.05),
        ],
    }
    assert script.largest_targets(study, "p") == ["2", "4"]
    met = {(t["method"], t["short"]): t["met"] for t in script.targets(study, "p")}
    assert met == {
        ("pinn-helmholtz", "clean error"): True,
        ("pinn-helmholtz", "clean R"): True,
        ("pinn-helmholtz", "clean contrast"): True,
        ("pinn-helmholtz", "-20 dB error"): True,
        ("pinn-helmholtz", "-20 dB vs AHI"): True,  # 0.10 / 0.50 = 0.2 <= 0.25
        ("pinn-hetero", "clean error"): False,
        ("pinn-hetero", "clean R"): False,
        ("pinn-hetero", "clean contrast"): False,
        ("pinn-hetero", "-20 dB"): None,
    }
    md = script.report(study)
    assert "failed: loss diverged at step 0" in md
    assert "| p | PINN, homogeneous form | 5 of 5 | none |" in md
    assert "| p | PINN, heterogeneous form | 0 of 3 | clean error, clean R, clean contrast |" in md
