"""Faults tried on the command line, nothing lost (the matrix of docs/reliability.md):
Ctrl-C (SIGINT) in a chunked batch writes a final checkpoint, prints one line, exits 130,
and --resume ends bit for bit at the uninterrupted result; a full disk while writing
the results is one line, keeps the checkpoints, and --resume writes the results without
training again; a read-only output folder is refused before any training."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn import cli, data

TINY = ["--width", "16", "--depth", "2", "--mu-width", "8", "--mu-depth", "1"]
TINY += ["--n-features", "8", "--batch-size", "64", "--pde-warmup", "3", "--no-progress"]  # = SMALL


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    paths = [folder / "a.npz", folder / "b.npz"]
    for path, g in zip(paths, (2500.0, 3500.0), strict=True):
        data.save(plane_wave_dataset(n=12, g=g), path)
    return paths


def test_sigint_writes_a_final_checkpoint_exits_130_and_resumes_bitwise(files, tmp_path):
    args = ["--steps", "1000", "--sync-interval", "5", "--checkpoint-every", "20"]
    args += ["--max-members-per-chunk", "1", *TINY]
    out = tmp_path / "stopped"
    command = [sys.executable, "-m", "helmholtz_pinn.cli", "invert", *map(str, files)]
    proc = subprocess.Popen([*command, "--out", str(out), *args], stderr=subprocess.PIPE, text=True)
    second = out / "checkpoints" / "chunk-001"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not list(second.glob("100")):
        time.sleep(0.01)  # chunk 0 is finished, chunk 1 is training (step 100 of 1000)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.kill(proc.pid, signal.SIGINT)
    stderr = proc.communicate(timeout=300)[1].strip().splitlines()
    assert proc.returncode == 130
    assert "Traceback" not in "\n".join(stderr)
    last = stderr[-1]
    assert last.startswith("helmholtz-pinn invert: interrupted (SIGINT) at step ")
    step = int(last.split(" at step ")[1].split()[0])
    assert 100 <= step < 1000 and last.endswith(
        f"of 1000; checkpoint in {second}; continue with --resume (resume=True)"
    )
    assert (second / str(step)).is_dir()  # the final checkpoint
    assert cli.main(["invert", *map(str, files), "--out", str(out), *args, "--resume"]) == 0
    whole = tmp_path / "whole"
    assert cli.main(["invert", *map(str, files), "--out", str(whole), *args]) == 0
    for name in ("a", "b"):
        a, b = (np.load(o / name / "mu.npz")["mu"] for o in (out, whole))
        np.testing.assert_array_equal(a, b)
    facts = json.loads((out / "b" / "metrics.json").read_text())
    assert (facts["resumed_from_step"], facts["chunks_already_done"]) == (step, 1)


def test_a_full_disk_keeps_the_checkpoints_and_resume_writes_the_results(
    files, tmp_path, monkeypatch, capsys
):
    args = ["invert", str(files[0]), "--out", str(tmp_path), "--steps", "10", *TINY]
    args += ["--sync-interval", "5", "--mu-ref", "3000"]  # test_checkpoint's compiled fit
    real = np.savez

    def full(*a, **k):
        raise OSError(28, "No space left on device", str(tmp_path / "mu.npz.tmp"))

    monkeypatch.setattr(np, "savez", full)
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "No space left on device" in err and "--resume" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints"]  # no partial file
    monkeypatch.setattr(np, "savez", real)
    assert cli.main([*args, "--resume"]) == 0
    facts = json.loads((tmp_path / "metrics.json").read_text())
    assert facts["resumed_from_step"] == 10 and facts["steps"] == 10  # nothing retrained
    assert (tmp_path / "mu.npz").is_file()


def test_a_read_only_output_folder_is_refused_before_training(files, tmp_path, monkeypatch, capsys):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    if os.geteuid() == 0:  # root may write anyway: deny as a read-only mount would
        access = os.access
        monkeypatch.setattr(os, "access", lambda p, m: m != os.W_OK and access(p, m))
    started = time.perf_counter()
    assert cli.main(["invert", str(files[0]), "--out", str(out), *TINY]) == 2
    assert time.perf_counter() - started < 5  # refused before the fit (which would be minutes)
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: output folder {out} is not a writable directory"
    )
    out.chmod(0o755)
