"""The command line end to end: simulate -> invert / baseline, errors, kill and resume."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

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
    assert np.all(mu["mu"].real > 0)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 40 and metrics["unit_mu"] == "Pa"
    for key in ("wall_time_s", "final_loss", "median_rel_error_storage", "pearson_r_storage"):
        assert key in metrics
    assert "1" in metrics["regions"]
    for fig in ("wave.png", "modulus.png", "loss.png"):
        assert (out / fig).stat().st_size > 1000
    assert (out / "history.csv").read_text().startswith("step,")
    base = tmp_path / "ahi"
    cli("baseline", phantom, "--method", "ahi", "--smoothing", "gaussian", "--out", base)
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


def test_killed_run_resumes_to_the_same_modulus(phantom, tmp_path):
    """SIGKILL mid-run, --resume, and the result equals an uninterrupted run bit for bit
    (CPU: the restored state, step counter, key and host schedule are exact)."""
    args = [
        *TINY[:-1],
        "--steps",
        "200",
        "--sync-interval",
        "5",
        "--checkpoint-every",
        "2",
        "--no-progress",
    ]
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "helmholtz_pinn.cli",
            "invert",
            str(phantom),
            "--out",
            str(killed),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ckpts = killed / "checkpoints"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        steps = [p for p in ckpts.glob("*") if p.name.isdigit()] if ckpts.exists() else []
        if any(int(p.name) >= 20 for p in steps):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "mu.npz").exists()
    cli("invert", phantom, "--out", killed, *args, "--resume")
    whole = tmp_path / "whole"
    cli("invert", phantom, "--out", whole, *args)
    a, b = np.load(killed / "mu.npz")["mu"], np.load(whole / "mu.npz")["mu"]
    np.testing.assert_array_equal(a, b)
    steps = [line.split(",")[0] for line in (killed / "history.csv").read_text().splitlines()]
    assert steps == [
        line.split(",")[0] for line in (whole / "history.csv").read_text().splitlines()
    ]


def test_diverged_run_writes_only_a_report(phantom, tmp_path):
    out = tmp_path / "div"
    proc = cli("invert", phantom, "--out", out, *TINY, "--learning-rate", "1e30", check=False)
    assert proc.returncode == 3
    assert "diverged" in proc.stderr and "Traceback" not in proc.stderr
    assert "diverged" in json.loads((out / "failure.json").read_text())["error"]
    assert not (out / "mu.npz").exists() and not (out / "metrics.json").exists()
