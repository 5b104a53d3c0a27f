"""Smoke test of scripts/accuracy.py: a --quick run writes the report, the numbers and the
figure, prints one JSON line per cell, and --report-only rebuilds the report from them;
the same for the elastic FEM phantoms (--elastic) on two tiny cases, merged with the scalar
study by --report-only; the targets' verdicts against hand-made numbers."""

import contextlib
import importlib.util
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "accuracy.py"
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
    cache, so the second noise level reuses the first's programs): (out folder, stdout).
    The phantom's law (Voigt) is named through --config: mu_model="auto" would fit both
    laws in every PINN cell, and nothing of the script depends on the law (the choice is
    tested in tests/fit/test_joint.py)."""
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
        "--config",
        '{"mu_model": "voigt"}',
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


# --------------------------------------------------------------------------- elastic phantoms

ELASTIC_METHODS = ["pinn-hetero", "ahi", "ahi-gaussian", "curl-mdev"]
BASELINES = ELASTIC_METHODS[1:]


def _tiny_elastic_sets(out: Path) -> list[dict]:
    """scripts/elastic_phantoms.write_sets with two tiny cases: 12 x 14 x 5 voxels of 2 mm,
    one frequency, a coarse mesh (about 1 s per solve); the files and manifest.json are
    those of the real script."""
    sys.path.insert(0, str(SCRIPT.parent))
    import elastic_phantoms

    from helmholtz_pinn.forward.elastic import Inclusion

    layout = (
        Inclusion((0.35, 0.35), (4e-3, 4e-3), 10e3),
        Inclusion((0.7, 0.7), (3e-3, 3e-3), 10e3),
    )
    small = {
        "layout": layout,
        "shape": (12, 14, 5),
        "spacing": 2e-3,
        "frequencies": (100.0,),
        "elements_per_wavelength": 2.5,
    }
    cases = {
        "tiny": ("tuning", small, [(None, 0), (-20.0, 0)]),
        "tiny-held": ("held-out", small, [(None, 0), (-20.0, 1)]),
    }
    saved = elastic_phantoms.CASES
    elastic_phantoms.CASES = cases
    try:
        return elastic_phantoms.write_sets(out)
    finally:
        elastic_phantoms.CASES = saved


@pytest.fixture(scope="module")
def elastic_run(script, tmp_path_factory):
    """The --quick elastic study in-process on the tiny sets (8 files: 2 cases x volume and
    slice x clean and -20 dB) in two runs merged by --report-only: the slices with the
    PINN and the baselines (stdout kept as a log), the volumes with the baselines only
    (one compiled PINN program keeps the test short); the runs draw no figures, the merge
    draws them from both runs' saved maps. (data, merged out, entries)."""
    tmp = tmp_path_factory.mktemp("elastic")
    data = tmp / "data"
    entries = _tiny_elastic_sets(data)
    base = ["--elastic", str(data), "--quick", "--no-compile-cache", "--no-figures"]
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        argv = [*base, "--output", "slice", "--out", str(tmp / "slices"), "--pde", "hetero"]
        assert script.main([*argv, "--methods", *BASELINES]) == 0
    (tmp / "slices.log").write_text(log.getvalue())
    argv = [*base, "--output", "volume", "--out", str(tmp / "volumes"), "--pde"]
    assert script.main([*argv, "--methods", *BASELINES]) == 0
    merged = [str(tmp / "slices.log"), str(tmp / "volumes" / "accuracy_elastic.json")]
    assert script.main(["--report-only", *merged, "--out", str(tmp / "out")]) == 0
    return data, tmp / "out", entries


def _methods(output: str) -> list[str]:
    return ELASTIC_METHODS if output == "slice" else BASELINES


def test_elastic_json_has_every_cell(script, elastic_run):
    data, out, entries = elastic_run
    assert len(entries) == 8
    assert json.loads((data / "manifest.json").read_text()) == json.loads(json.dumps(entries))
    study = json.loads((out / "accuracy_elastic.json").read_text())
    assert study["meta"]["complete"] is True and study["results"] == []
    assert len(study["meta"]["runs"]) == 2
    rows = study["elastic_results"]
    assert {(r["file"], r["method"]) for r in rows} == {
        (e["file"], m) for e in entries for m in _methods(e["output"])
    }
    for r in rows:
        e = next(e for e in entries if e["file"] == r["file"])
        assert (r["set"], r["case"], r["output"], r["noise_db"], r["seed"]) == (
            e["set"], e["case"], e["output"], e["noise_db"], e["seed"]
        )  # fmt: skip
        assert "error" not in r, r
        keys = ("median_rel_error_storage", "pearson_r_storage", "median_rel_error_loss")
        for key in (*keys, "wall_time_s"):
            assert _finite(r[key]), (r["method"], key, r[key])
        assert set(r["contrast_transfer"]) == {"2", "3"} and r["quick"] is True
    pinn = [r for r in rows if r["method"] == "pinn-hetero"]
    assert all(r["pde"] == "hetero" and r["steps"] == 100 for r in pinn)
    assert all(r["fit_quality"] is not None for r in pinn)  # the library's checks, kept
    info = study["elastic_files"]["held-out/tiny-held_volume_clean.npz"]
    assert info["shape"] == [12, 14, 5] and info["components"] == 3


def test_elastic_report_tables(script, elastic_run):
    _, out, _ = elastic_run
    md = (out / "accuracy_elastic.md").read_text()
    for heading in (
        "## Elastic FEM phantoms",
        "### Held-out set: the issue's targets",
        "### Tuning set (defaults chosen on it)",
        "### tiny-held: held-out set",
        "### tiny: tuning set (defaults chosen on it)",
        "### Beside MRE-PINN's published figures",
    ):
        assert heading in md, heading
    assert "45.9 % (mean relative MAD)" in md and "how comparable the setups are" in md.lower()
    assert "0.5x curl-MDEV's on the same file" in md
    cells = [ln for ln in md.splitlines() if ln.startswith(("| volume |", "| slice |"))]
    assert len(cells) == 4 * len(ELASTIC_METHODS) + 4 * len(BASELINES)
    for method in ELASTIC_METHODS:
        name = script.elastic.label(method) + " (quick)"
        n = sum(f"| {name} |" in ln for ln in cells)
        assert n == (4 if method == "pinn-hetero" else 8), method
    # targets: one row per case and output with a PINN (slices), six verdicts each
    targets = [ln for ln in md.splitlines() if ln.startswith("| tiny")]
    assert len(targets) == 2
    assert all(len(re.findall(r"\((\*\*NOT )?met(\*\*)?\)", ln)) == 6 for ln in targets)
    for case in ("tiny", "tiny-held"):
        for output in ("volume", "slice"):  # drawn again by --report-only from both runs
            png = out / "figures" / f"accuracy_elastic_{case}_{output}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_only_merges_scalar_and_elastic(script, quick_run, elastic_run, tmp_path):
    scalar_out, _ = quick_run
    _, out, _ = elastic_run
    inputs = [str(scalar_out / "accuracy.json"), str(out / "accuracy_elastic.json")]
    assert script.main(["--report-only", *inputs, "--out", str(tmp_path), "--no-figures"]) == 0
    merged = json.loads((tmp_path / "accuracy.json").read_text())
    assert merged["meta"]["complete"] is True
    assert len(merged["results"]) == 2 * 4 and len(merged["elastic_results"]) == 28
    md = (tmp_path / "accuracy.md").read_text()
    original = (scalar_out / "accuracy.md").read_text()
    assert original.split("## ", 1)[1].rstrip("\n") in md  # the scalar report unchanged
    assert md.index(f"## {PHANTOM}") < md.index("## Elastic FEM phantoms")


def test_elastic_filters_skip_done_and_budget(script, elastic_run, tmp_path):
    """Filters select files in study order; a run skips the cells finished in earlier
    results; a time budget of 0 s starts nothing (and the run is marked incomplete)."""
    data, out, _ = elastic_run
    ns = script.build_parser().parse_args(["--set", "held-out", "--output", "slice"])
    ns.seeds = None
    files = [e["file"] for e in script.elastic.select(script.elastic.read_manifest(data), ns)]
    assert files == [
        "held-out/tiny-held_slice_clean.npz",
        "held-out/tiny-held_slice_-20dB-seed1.npz",
    ]
    base = ["--elastic", str(data), "--quick", "--no-compile-cache", "--no-figures", "--pde"]
    base += ["--methods", *BASELINES]
    done = str(out / "accuracy_elastic.json")
    assert script.main([*base, "--out", str(tmp_path / "a"), "--skip-done", done]) == 0
    again = json.loads((tmp_path / "a" / "accuracy_elastic.json").read_text())
    assert again["elastic_results"] == [] and again["meta"]["elastic"]["files"] == []
    argv = [*base, "--out", str(tmp_path / "b"), "--time-budget", "0", "--limit-files", "1"]
    assert script.main(argv) == 0
    stopped = json.loads((tmp_path / "b" / "accuracy_elastic.json").read_text())
    assert stopped["elastic_results"] == [] and stopped["meta"]["complete"] is False
    assert stopped["meta"]["elastic"]["files"] == ["tuning/tiny_volume_clean.npz"]
    # a manifest with only some of its files present (a subset copied to a GPU machine)
    part = tmp_path / "part"
    (part / "tuning").mkdir(parents=True)
    (part / "manifest.json").write_text((data / "manifest.json").read_text())
    shutil.copy(data / "tuning" / "tiny_slice_clean.npz", part / "tuning")
    argv = ["--elastic", str(part), "--quick", "--no-figures", "--pde", "--methods", "ahi"]
    assert script.main([*argv, "--no-compile-cache", "--out", str(tmp_path / "p")]) == 0
    subset = json.loads((tmp_path / "p" / "accuracy_elastic.json").read_text())
    assert [r["file"] for r in subset["elastic_results"]] == ["tuning/tiny_slice_clean.npz"]
    assert len(subset["meta"]["elastic"]["missing_files"]) == 7
    assert subset["meta"]["complete"] is True
    with pytest.raises(SystemExit):  # elastic options without --elastic
        script.main(["--set", "held-out", "--out", str(tmp_path / "c")])


def test_elastic_failures_are_recorded(script, monkeypatch):
    """A package error in a fit, or curl-MDEV on 2-component data, becomes the cell's
    error string; the study goes on."""
    from helmholtz_pinn import errors
    from helmholtz_pinn.io.dataset import Dataset

    u = np.ones((1, 2, 6, 6), np.complex64)
    d = Dataset(u=u, frequency=np.array([80.0]), spacing=np.array([1e-3, 1e-3]))
    facts, mu = script.elastic.run_baseline("curl-mdev", d, 2.0, 2.0)
    assert mu is None and "three displacement components" in facts["error"]

    def diverge(*args, **kwargs):
        raise errors.DivergenceError("loss diverged at step 100")

    monkeypatch.setattr(script.elastic.hp, "invert", diverge)
    ((facts, mu),) = script.elastic.run_pinn("pinn-hetero", [d], None)
    assert mu is None and facts["error"] == "DivergenceError: loss diverged at step 100"


def _erow(file, set_, noise_db, seed, method, err, r=0.95, contrast=None, **extra):
    return {
        "file": file, "case": "c", "set": set_, "output": "volume", "noise_db": noise_db,
        "noise": "x", "seed": seed, "method": method, "median_rel_error_storage": err,
        "pearson_r_storage": r, "contrast_transfer": contrast or {"2": 0.9, "3": 0.85, "4": 0.1},
        "wall_time_s": 1.0, **extra,
    }  # fmt: skip


def test_elastic_targets_against_known_answers(script):
    """Hand-made numbers: clean targets from the clean file, the -20 dB ones on every seed,
    the ratio against curl-MDEV on the same file; the two largest regions are 2 and 4."""
    voxels = {"1": 900, "2": 50, "3": 5, "4": 20}
    study = {
        "meta": {"complete": True},
        "elastic_files": {
            f: {
                "case": "c",
                "output": "volume",
                "region_voxels": voxels,
                "shape": [9, 9, 4],
                "spacing_m": [1e-3] * 3,
                "frequencies_hz": [80.0],
                "components": 3,
            }
            for f in ("c0", "c1", "c2")
        },  # fmt: skip
        "elastic_results": [
            _erow("c0", "held-out", None, None, "pinn-hetero", 0.04, contrast={"2": 0.9, "4": 0.8}),
            _erow("c1", "held-out", -20.0, 1, "pinn-hetero", 0.10, r=0.8),
            _erow("c2", "held-out", -20.0, 2, "pinn-hetero", 0.12, r=0.7),
            _erow("c1", "held-out", -20.0, 1, "curl-mdev", 0.30),
            _erow("c2", "held-out", -20.0, 2, "curl-mdev", 0.20),
        ],
    }
    (row,) = script.elastic.elastic_targets(study, "held-out")
    met = {t["short"]: t["met"] for t in row["targets"]}
    assert met == {
        "clean error": True,
        "clean R": True,
        "clean contrast": True,  # regions 2 and 4: 90 % and 80 %
        "-20 dB error": True,
        "-20 dB R": False,  # seed 2: 0.7 < 0.75
        "-20 dB vs curl-MDEV": False,  # seed 2: 0.12 / 0.20 = 0.6 > 0.5
    }
    value = {t["short"]: t["value"] for t in row["targets"]}
    assert value["-20 dB vs curl-MDEV"] == "x0.33 (seed 1), x0.60 (seed 2)"
    assert script.elastic.elastic_targets(study, "tuning") == []
    md = script.report(study)
    assert "| c | volume | PINN, hetero form | 4.0 % (met) |" in md and "| 4 of 6 |" in md


def test_elastic_methods_are_what_the_command_line_names(script):
    """--methods alone runs only those methods; --pde adds its forms; neither runs all."""
    methods_of, names = script.elastic.methods_of, script.elastic.lab.pde_forms()
    assert methods_of(None, ["curl-mdev", "ahi"]) == ["curl-mdev", "ahi"]
    assert methods_of(["navier"], ["pinn-auto"]) == ["pinn-navier", "pinn-auto"]
    every = methods_of(None, None)
    assert every[: len(names)] == [f"pinn-{n}" for n in names]
    assert every[len(names) :] == list(script.elastic.DEFAULT_METHODS)
    assert methods_of([], None) == list(script.elastic.DEFAULT_METHODS)
