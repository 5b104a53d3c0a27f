"""The command line end to end: simulate -> invert / baseline, errors, kill and resume;
elastic phantoms, the curl-MDEV baseline and the fit-quality warnings."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.cli import commands as cli_module
from helmholtz_pinn.forward import elastic
from helmholtz_pinn.io import dataset as datasets

TINY = [
    "--steps",
    "40",
    "--sync-interval",
    "10",
    "--width",
    "16",
    "--depth",
    "2",
    "--mu-width",
    "8",
    "--mu-depth",
    "1",
    "--n-features",
    "8",
    "--batch-size",
    "128",
    "--pde-warmup",
    "10",
    "--mu-model",
    "voigt",
    "--no-progress",
]


def cli(*args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "helmholtz_pinn.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def phantom(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "homog.npz"
    cli(
        "simulate",
        "--phantom",
        "homogeneous",
        "--out",
        path,
        "--frequencies",
        "60",
        "80",
        "--components",
        "1",
        "--noise-db",
        "-30",
        "--seed",
        "3",
    )
    return path


def test_simulate_invert_baseline_write_documented_files(phantom, tmp_path):
    data = np.load(phantom)
    assert data["u"].shape == (2, 1, 64, 64) and np.iscomplexobj(data["u"])
    out = tmp_path / "inv"
    cli("invert", phantom, "--out", out, *TINY)
    mu = np.load(out / "mu.npz")
    assert mu["mu"].shape == (2, 64, 64) and np.iscomplexobj(mu["mu"])
    assert str(mu["unit"]) == "Pa"
    assert np.all(np.isfinite(mu["mu"]))  # (G' > 0 holds by construction: not tested here)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 40 and metrics["unit_mu"] == "Pa"
    for key in ("wall_time_s", "final_loss", "median_rel_error_storage", "pearson_r_storage"):
        assert key in metrics
    assert "1" in metrics["regions"]
    for fig in ("wave.png", "modulus.png", "loss.png", "misfit.png"):
        assert (out / fig).stat().st_size > 1000
    assert (out / "history.csv").read_text().startswith("step,")
    assert mu["misfit"].shape == (2, 64, 64) and len(metrics["wave_misfit"]["median"]) == 2
    base = tmp_path / "ahi"
    cli("baseline", phantom, "--method", "ahi", "--smoothing", "gaussian", "--out", base)
    assert "misfit" not in np.load(base / "mu.npz") and not (base / "misfit.png").exists()
    ahi = np.load(base / "mu.npz")["mu"]
    assert ahi.shape[-2:] == (64, 64)
    assert json.loads((base / "metrics.json").read_text())["median_rel_error_storage"] < 0.1


@pytest.mark.parametrize(
    "args, message",
    [
        (["invert", "missing.npz"], "no such file"),
        (["simulate", "--phantom", "nope", "--out", "x.npz"], "nope"),
        (["invert", "{bad}", "--steps", "10"], "u must be complex"),
        (["invert", "{phantom}", "--learning-rate", "-1"], "learning_rate"),
    ],
)
def test_bad_input_gives_one_line_error_and_exit_2(args, message, phantom, tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, u=np.ones((1, 1, 8, 8)), frequency=[60.0], spacing=[1e-3, 1e-3])
    args = [a.format(bad=bad, phantom=phantom) for a in args]
    proc = (
        cli(*args, "--out" if args[0] == "invert" else "", tmp_path / "o", check=False)
        if args[0] == "invert"
        else cli(*args, check=False)
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o" / "mu.npz").exists()


def test_unwritable_output_folder_is_reported(phantom, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = cli("invert", phantom, "--out", blocker / "sub", *TINY, check=False)
    assert proc.returncode == 2 and "output folder" in proc.stderr


def test_killed_batch_resumes_to_the_same_modulus(phantom, tmp_path):
    """SIGKILL mid-run of a batch of two files fitted one chunk at a time (chunk 0
    finished, chunk 1 past its checkpoint of step 20), --resume, and every result equals
    an uninterrupted run bit for bit (CPU: the restored state, step counter, key and
    host schedule are exact; the finished chunk is restored, not refitted)."""
    other = tmp_path / "other.npz"
    ds = datasets.load(phantom)
    datasets.save(dataclasses.replace(ds, u=ds.u.conj()), other)  # the waves reversed
    args = [*TINY[:-1], "--steps", "200", "--sync-interval", "5", "--checkpoint-every", "2"]
    args += ["--max-members-per-chunk", "1", "--no-progress"]
    files = [str(phantom), str(other)]
    killed = tmp_path / "killed"
    every_block = (  # a checkpoint every 2 blocks, however soon (checkpoints.MIN_INTERVAL_S)
        "import sys; from helmholtz_pinn.fit import checkpoints; checkpoints.MIN_INTERVAL_S = 0; "
        "from helmholtz_pinn.cli.commands import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", every_block, "invert", *files, "--out", str(killed)] + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ckpts = killed / "checkpoints" / "chunk-001"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        steps = [p for p in ckpts.glob("*") if p.name.isdigit()] if ckpts.exists() else []
        if any(int(p.name) >= 20 for p in steps):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "homog" / "mu.npz").exists()
    cli("invert", *files, "--out", killed, *args, "--resume")
    whole = tmp_path / "whole"
    cli("invert", *files, "--out", whole, *args)
    for stem in ("homog", "other"):
        a, b = (np.load(o / stem / "mu.npz")["mu"] for o in (killed, whole))
        np.testing.assert_array_equal(a, b)
        steps = [
            [line.split(",")[0] for line in (o / stem / "history.csv").read_text().splitlines()]
            for o in (killed, whole)
        ]
        assert steps[0] == steps[1]
    facts = json.loads((killed / "other" / "metrics.json").read_text())
    assert facts["chunks_already_done"] == 1 and facts["resumed_from_step"] >= 20


def test_diverged_run_writes_only_a_report(phantom, tmp_path):
    out = tmp_path / "div"
    proc = cli("invert", phantom, "--out", out, *TINY, "--learning-rate", "1e30", check=False)
    assert proc.returncode == 3
    assert "diverged" in proc.stderr and "Traceback" not in proc.stderr
    assert "diverged" in json.loads((out / "failure.json").read_text())["error"]
    assert not (out / "mu.npz").exists() and not (out / "metrics.json").exists()


# --- simulate --physics elastic (in-process: cli.main) ---------------------------------

# A coarse four-target slab: 64 x 64 x 12 mm in 4 mm voxels, 2 elements per wavelength
# at 60 Hz (5 x 5 x 1 cubes): a few seconds per solve.
ELASTIC = ["simulate", "--physics", "elastic", "--shape", "16", "16", "3", "--spacing", "4e-3"]
ELASTIC += ["--frequencies", "60", "--elements-per-wavelength", "2"]


@pytest.mark.parametrize("output, grid", [("volume", (16, 16, 3)), ("slice", (16, 16))])
def test_simulate_elastic_writes_a_three_component_dataset(tmp_path, output, grid):
    path = tmp_path / "elastic.npz"
    args = [*ELASTIC, "--output", output, "--noise-db", "-30", "--seed", "1", "--out", path]
    assert cli_module.main([str(a) for a in args]) == 0
    data = datasets.load(path)
    assert data.u.shape == (1, 3, *grid) and np.iscomplexobj(data.u)
    np.testing.assert_allclose(data.spacing, [4e-3] * len(grid))
    assert data.frequency.tolist() == [60.0]
    assert data.mu.shape == (1, *grid) and {1, 2} <= set(np.unique(data.regions).tolist())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layout", "two-ellipse"], "--layout apply to --physics elastic only"),
        (["--physics", "elastic", "--components", "2"], "--components apply to --physics scalar"),
        (["--physics", "elastic", "--phantom", "smooth"], "--phantom apply to --physics scalar"),
        (
            ["--physics", "elastic", "--mesh-size", "0.01", "--elements-per-wavelength", "3"],
            "not both",
        ),
        # a 16 mm box cannot hold the 10 mm target: simulate_elastic's own check
        (["--physics", "elastic", "--shape", "16", "16", "3"], "does not fit"),
    ],
)
def test_simulate_bad_combinations_exit_2(args, message, tmp_path, capsys):
    out = tmp_path / "x.npz"
    assert cli_module.main(["simulate", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_simulate_rejects_non_positive_sizes(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli_module.main(["simulate", "--physics", "elastic", "--spacing", "0", "--out", "x.npz"])
    assert exit_.value.code == 2 and "> 0" in capsys.readouterr().err


def test_elastic_choices_are_the_librarys():
    """The parser spells the choices out (no FEM import for --help); they must match."""
    sub = next(a for a in cli_module.build_parser()._actions if a.dest == "command")
    choices = {a.dest: a.choices for a in sub.choices["simulate"]._actions if a.choices}
    assert tuple(choices["layout"]) == tuple(elastic.LAYOUTS)
    assert tuple(choices["faces"]) == elastic.FACES
    assert tuple(choices["z_faces"]) == elastic.Z_FACES
    assert tuple(choices["output"]) == elastic.OUTPUTS


# --- baseline --method curl-mdev ---------------------------------------------------------


def shear_waves(tmp_path, components=3, n=24, h=1e-3, freqs=(60.0, 90.0), g=3000.0, eta=1.0):
    """A 2-D slice of 3-D motion in a homogeneous Voigt medium: at each frequency an
    in-plane-polarised shear wave along (0.8, 0.6) and a z-polarised one along (-0.6, 0.8)
    (exact, divergence-free; d_z = 0), k^2 = rho omega^2 / mu. Saved as .npz."""
    freqs = np.asarray(freqs)
    mu = g + 1j * 2 * np.pi * freqs * eta
    x, y = np.arange(n)[:, None] * h, np.arange(n)[None, :] * h
    u = []
    for f, m in zip(freqs, mu, strict=True):
        k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / m)
        e1, e2 = np.exp(1j * k * (0.8 * x + 0.6 * y)), np.exp(1j * k * (-0.6 * x + 0.8 * y))
        u.append([-0.6 * e1, 0.8 * e1, e2][:components])
    path = tmp_path / f"shear{components}.npz"
    np.savez(
        path, u=np.array(u), frequency=freqs, spacing=[h, h], mu=mu[:, None, None] + 0 * (x + y)
    )
    return path


@pytest.mark.parametrize(
    "method, function, smoothing", [("curl-mdev", "curl_mdev", "gaussian"), ("ahi", "ahi", "none")]
)
def test_baseline_methods_write_the_same_outputs(tmp_path, method, function, smoothing):
    """Both methods on exact 3-component shear waves (3 kPa): curl-MDEV and AHI gave a
    median G' of 3010 and 3011 Pa when measured; tolerance 5 %."""
    out = tmp_path / method
    args = ["baseline", str(shear_waves(tmp_path)), "--method", method, "--out", str(out)]
    assert cli_module.main(args) == 0
    with np.load(out / "mu.npz") as saved:
        mu, unit = saved["mu"], str(saved["unit"])
    assert mu.shape == (24, 24) and unit == "Pa"
    assert np.median(mu.real) == pytest.approx(3000.0, rel=0.05)
    facts = json.loads((out / "metrics.json").read_text())
    assert facts["method"] == method and facts["unit_mu"] == "Pa"
    settings = facts["baseline_settings"]
    assert settings["method"] == function and settings["smoothing"] == smoothing
    assert settings["spacing_mm"] == [1.0, 1.0]
    assert facts["median_rel_error_storage"] < 0.05
    assert [c["name"] for c in facts["fit_quality"]] == ["modulus_range"]
    assert facts["fit_quality"][0]["passed"]
    assert json.loads((out / "config.json").read_text()) == settings
    assert (out / "modulus.png").stat().st_size > 1000


def test_baseline_metric_margin_scores_the_interior(tmp_path):
    out = tmp_path / "m"
    args = ["baseline", str(shear_waves(tmp_path)), "--out", str(out), "--metric-margin", "2"]
    assert cli_module.main(args) == 0
    facts = json.loads((out / "metrics.json").read_text())
    assert facts["metric_margin"] == 2 and facts["metric_voxels"] == 20 * 20  # of 24 x 24
    assert cli_module.main([*args[:-1], "12"]) == 2  # nothing left: one-line error


def test_curl_mdev_needs_three_components(tmp_path, capsys):
    out = tmp_path / "o"
    path = shear_waves(tmp_path, components=2)
    assert cli_module.main(["baseline", str(path), "--method", "curl-mdev", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "3 displacement components" in err and "C = 2" in err and "Traceback" not in err
    assert not (out / "mu.npz").exists()


# --- fit quality after invert ------------------------------------------------------------


def test_invert_prints_failed_fit_quality_checks_and_exits_0(tmp_path):
    """A learning rate of 1e-9 leaves the networks where they started: the loss check
    fails, the CLI says so on stderr after the fit, and the exit status is still 0."""
    path = tmp_path / "plane.npz"
    datasets.save(plane_wave_dataset(), path)
    out = tmp_path / "inv"
    proc = cli("invert", path, "--out", out, *TINY, "--learning-rate", "1e-9", "--mu-ref", "3000")
    assert "fit quality: loss_decrease" in proc.stderr and "--learning-rate" in proc.stderr
    assert proc.stderr.count("fit quality: loss_decrease") == 1  # printed, not also warned
    checks = json.loads((out / "metrics.json").read_text())["fit_quality"]
    failed = [c["name"] for c in checks if not c["passed"]]
    assert "loss_decrease" in failed
    assert (out / "mu.npz").exists()


def test_invert_nifti_writes_the_clinical_maps(phantom, tmp_path):
    """--nifti: OUT/maps holds one NIfTI per quantity and frequency (mm voxels) whose
    G' values are the mu.npz map."""
    nib = pytest.importorskip("nibabel")
    out = tmp_path / "nii"
    cli("invert", phantom, "--out", out, "--nifti", "--metric-margin", "3", *TINY)
    facts = json.loads((out / "metrics.json").read_text())
    assert facts["metric_margin"] == 3 and facts["metric_voxels"] == 58 * 58  # 64 x 64 grid
    maps = sorted(p.name for p in (out / "maps").glob("*.nii.gz"))
    assert "mask.nii.gz" in maps and len(maps) > 2
    storage = sorted(m for m in maps if m.startswith("storage_Pa_"))
    assert len(storage) == 2  # one per frequency
    mu = np.load(out / "mu.npz")["mu"]
    img = nib.load(out / "maps" / storage[0])  # the lower frequency sorts first here
    np.testing.assert_allclose(np.asarray(img.dataobj)[..., 0], mu[0].real, rtol=1e-6)
    assert img.header.get_zooms()[:2] == pytest.approx((1.0, 1.0))  # mm


# --- the first hour: typos, one-line errors, a light --help ------------------------------


@pytest.mark.parametrize(
    "args, prog, said",
    [
        (
            ["invert", "--step", "100"],
            "invert",
            "unrecognized argument --step; did you mean --steps?",
        ),
        (["invrt", "x.npz"], "", "invalid choice: 'invrt' (choose from 'simulate', 'invert', "),
        (["invrt", "x.npz"], "", "; did you mean invert?"),
        (
            ["simulate", "--physics", "elastc", "--out", "x.npz"],
            "simulate",
            "did you mean elastic?",
        ),
        (["baseline", "a.npz", "--out", "o", "--frobnicate"], "baseline", "argument --frobnicate"),
    ],
)
def test_a_typo_is_one_error_line_with_a_near_miss_below_the_commands_usage(
    args, prog, said, capsys
):
    """An unknown option is an error of its subcommand (its usage, not the top level's);
    the nearest option or choice is suggested, none for a word like no other."""
    with pytest.raises(SystemExit) as exit_:
        cli_module.main(args)
    assert exit_.value.code == 2
    usage, error, *more = capsys.readouterr().err.splitlines()
    name = f"helmholtz-pinn {prog}".strip()
    assert not more and usage.startswith(f"usage: {name} [options]")
    assert error.startswith(f"{name}: error: ") and said in error
    if "frobnicate" in said:
        assert "did you mean" not in error


def test_an_abbreviated_option_is_not_taken_for_the_full_one(capsys):
    """--step was silently --steps (argparse's allow_abbrev): a later option --step-size
    would have changed what old command lines mean."""
    with pytest.raises(SystemExit):
        cli_module.main(["invert", "--step", "100", "--out", "unused"])
    assert "did you mean --steps?" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, said",
    [
        (["invert", "missing.npz", "--out", "{o}"], "no such file: missing.npz"),
        (["baseline", "{corrupt}", "--out", "{o}"], "is not a readable .npz file"),
        (["invert", "{nokeys}", "--out", "{o}"], "missing required key 'u'"),
        (["invert", "--slicewise", "{nokeys}", "{nokeys}", "--out", "{o}"], "--slicewise takes"),
        (["invert", "{plane}", "--resume-strict", "--out", "{o}"], "no usable checkpoint in"),
        (["simulate", "--physics", "elastic", "--phantom", "smooth", "--out", "{o}.npz"], "scalar"),
        # usage errors: the command's usage line, then the one error line
        (["simulate", "--out", "{o}.txt"], "expected a file name ending in .npz"),
        (["convert", "a.mat", "--out", "{o}"], "expected a file name ending in .npz"),
        (["invert", "{nokeys}", "--devices", "0", "--out", "{o}"], "positive integer or 'all'"),
        (["invert", "{nokeys}", "--devices", "two", "--out", "{o}"], "got 'two'"),
        (["baseline", "{nokeys}", "--window", "five", "--out", "{o}"], "invalid int value"),
    ],
)
def test_every_error_is_one_line_and_exit_2(args, said, tmp_path, capsys):
    (tmp_path / "corrupt.npz").write_bytes(b"PK\x03\x04 not really a zip archive")
    np.savez(tmp_path / "nokeys.npz", a=np.ones(3))
    datasets.save(plane_wave_dataset(), tmp_path / "plane.npz")
    args = [
        a.format(
            o=tmp_path / "o", **{s: tmp_path / f"{s}.npz" for s in ("corrupt", "nokeys", "plane")}
        )
        for a in args
    ]
    try:
        status = cli_module.main(args)
    except SystemExit as exit_:  # a usage error (argparse)
        status = exit_.code
    lines = capsys.readouterr().err.splitlines()
    if len(lines) == 2:
        assert lines.pop(0).startswith(f"usage: helmholtz-pinn {args[0]} [options]")
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"helmholtz-pinn {args[0]}: error: ") and said in lines[0]
    assert not (tmp_path / "o" / "mu.npz").exists() and not (tmp_path / "o.npz").exists()


def test_help_imports_no_jax():
    """``--help`` (top level and a subcommand) builds the parser without JAX or the
    plotting and solver stacks, so it answers at once."""
    code = (
        "import contextlib, io, sys\n"
        "from helmholtz_pinn import cli\n"
        "for argv in (['--help'], ['invert', '--help'], ['simulate', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        cli.main(argv)\n"
        "heavy = ('jax', 'jaxlib', 'optax', 'matplotlib', 'scipy')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_simulate_nz_writes_a_volume(tmp_path, capsys):
    out = tmp_path / "vol.npz"
    args = ["simulate", "--phantom", "homogeneous", "--nz", "4", "--frequencies", "80"]
    assert cli_module.main([*args, "--components", "1", "--out", str(out)]) == 0
    vol = datasets.load(out)
    assert vol.u.shape == (1, 1, 64, 64, 4) and vol.ndim == 3
    assert cli_module.main(["simulate", "--physics", "elastic", "--nz", "4", "--out", "x.npz"]) == 2
    assert "--nz apply to --physics scalar only" in capsys.readouterr().err


def test_baseline_sigma_in_mm_equals_sigma_in_voxels_and_is_recorded(tmp_path, capsys):
    """--sigma-mm 3 on 1.5 mm voxels is --sigma 2 and implies Gaussian smoothing; the
    settings (sigma in voxels and mm) are in metrics.json and config.json."""
    path = shear_waves(tmp_path, components=2, h=1.5e-3)
    runs = {"mm": ["--sigma-mm", "3"], "vox": ["--sigma", "2"]}
    for name, flags in runs.items():
        argv = ["baseline", str(path), *flags, "--out", str(tmp_path / name)]
        assert cli_module.main(argv) == 0
    mu = {n: np.load(tmp_path / n / "mu.npz")["mu"] for n in runs}
    np.testing.assert_allclose(mu["mm"], mu["vox"], rtol=1e-12)
    settings = json.loads((tmp_path / "mm" / "config.json").read_text())
    assert settings["smoothing"] == "gaussian" and settings["sigma_voxels"] == pytest.approx(2.0)
    assert settings["sigma_mm"] == pytest.approx([3.0, 3.0])
    facts = json.loads((tmp_path / "mm" / "metrics.json").read_text())
    assert facts["baseline_settings"] == settings
    both = ["baseline", str(path), "--sigma", "2", "--sigma-mm", "3", "--out", "x"]
    with pytest.raises(SystemExit) as exit_:
        cli_module.main(both)
    assert exit_.value.code == 2 and "not allowed with" in capsys.readouterr().err
    plain = ["baseline", str(path), "--smoothing", "none", "--sigma", "2", "--out", "x"]
    assert cli_module.main(plain) == 2
    assert "needs smoothing 'gaussian'" in capsys.readouterr().err


def test_baseline_help_states_the_measured_default_widths():
    from helmholtz_pinn.assess.baselines import AHI_SIGMA, CURL_SIGMA

    sub = next(a for a in cli_module.build_parser()._actions if a.dest == "command")
    sigma = next(a for a in sub.choices["baseline"]._actions if a.dest == "sigma")
    assert f"{AHI_SIGMA:g} for ahi, {CURL_SIGMA:g} for curl-mdev" in sigma.help


def test_invert_default_law_is_chosen_printed_and_recorded(phantom, tmp_path):
    """--mu-model auto (the default): the law kept, the spread of every law judged, the
    fits' time (after two fits, the option that fits the kept law alone), and the kept
    law's own map (alpha, or Voigt's viscosity in Pa s) are printed, recorded and saved."""
    out = tmp_path / "auto"
    proc = cli("invert", phantom, "--out", out, *TINY, "--mu-model", "auto")
    law = json.loads((out / "metrics.json").read_text())["law"]
    assert set(law["tried"]) == {"springpot", "voigt"} and law["mu_model"] in law["tried"]
    if law["fits"] == 2:
        assert f"mu_model={law['mu_model']} fits this law alone" in law["line"]
        assert f"--mu-model {law['mu_model']} fits this law alone" in proc.stdout
    else:
        assert "; 1 fit in" in law["line"] and "; 1 fit in" in proc.stdout
    assert law["line"].split(";")[0] in proc.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["mu_model"] == law["mu_model"]
    with np.load(out / "mu.npz") as saved:
        own = {"springpot": "alpha", "voigt": "viscosity"}.get(law["mu_model"])
        assert own is None or str(saved[f"{own}_unit"]) in ("1", "Pa s")
        assert {k for k in saved if k in ("alpha", "viscosity")} == ({own} if own else set())
