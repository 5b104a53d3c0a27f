"""Faults tried on the command line, nothing lost (the matrix of docs/reliability.md):
Ctrl-C (SIGINT) writes a final checkpoint, prints one line, exits 130,
and --resume ends bit for bit at the uninterrupted result; a full disk while writing
the results is one line, keeps the checkpoints, and --resume writes the results without
training again; a full disk while checkpointing stops with one line, the previous
checkpoint kept; a read-only output folder is refused before any training; a second
command into the same folder is refused while the first finishes right."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import orbax.checkpoint as ocp
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.assess import laws
from helmholtz_pinn.cli import commands as cli
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import OutputError
from helmholtz_pinn.fit import checkpoints
from helmholtz_pinn.fit.inversion import invert
from helmholtz_pinn.io import dataset as data
from helmholtz_pinn.report.folder_lock import LOCK_NAME

TINY = ["--width", "16", "--depth", "2", "--mu-width", "8", "--mu-depth", "1"]
TINY += ["--n-features", "8", "--batch-size", "64", "--pde-warmup", "3", "--no-progress"]  # = SMALL
TINY += ["--mu-model", "voigt"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    paths = [folder / "a.npz", folder / "b.npz"]
    for path, g in zip(paths, (2500.0, 3500.0), strict=True):
        data.save(plane_wave_dataset(n=12, g=g), path)
    return paths


@pytest.mark.parametrize("name, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stop_signal_writes_a_final_checkpoint_and_resumes_bitwise(
    name, status, files, tmp_path, monkeypatch, capsys
):
    """A real SIGINT (Ctrl-C) or SIGTERM (Slurm, Kubernetes, ``timeout``), raised in this
    process once the block of step 10 is checkpointed (deterministic timing; checkpoints
    otherwise only every 1000 blocks): one line, its own exit status, and a resume that
    ends at the uninterrupted modulus bit for bit."""
    args = [str(files[0]), "--steps", "20", "--sync-interval", "5", "--checkpoint-every", "1000"]
    args += [*TINY, "--mu-ref", "3000"]
    save = checkpoints.Checkpointer.__call__
    number = getattr(signal, name)

    def stop_at_step_10(self, state, host):
        save(self, state, host)
        if host.history[-1]["step"] == 10:
            signal.raise_signal(number)

    monkeypatch.setattr(checkpoints.Checkpointer, "__call__", stop_at_step_10)
    out, whole = tmp_path / "stopped", tmp_path / "whole"
    before = signal.getsignal(number)  # SIG_IGN when the suite runs under nohup
    assert cli.main(["invert", "--out", str(out), *args]) == status
    folder = (out / "checkpoints").absolute()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"helmholtz-pinn invert: interrupted ({name}) at step 10 of 20; checkpoint in "
        f"{folder}; continue with --resume"
    )
    assert [p.name for p in folder.iterdir()] == ["10"] and not (out / "mu.npz").exists()
    monkeypatch.setattr(checkpoints.Checkpointer, "__call__", save)
    assert signal.getsignal(number) is before  # restored
    assert cli.main(["invert", "--out", str(out), *args, "--resume"]) == 0
    assert cli.main(["invert", "--out", str(whole), *args]) == 0
    a, b = (np.load(o / "mu.npz")["mu"] for o in (out, whole))
    np.testing.assert_array_equal(a, b)
    assert json.loads((out / "metrics.json").read_text())["resumed_from_step"] == 10


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
    assert cli.main(["invert", str(files[0]), "--out", str(out), *TINY]) == 2
    assert list(out.iterdir()) == []  # refused before the fit: no checkpoint folder
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: output folder {out} is not a writable directory"
    )
    out.chmod(0o755)


def test_a_full_disk_while_checkpointing_stops_with_one_line(files, tmp_path, monkeypatch):
    save = ocp.CheckpointManager.save
    monkeypatch.setattr(checkpoints, "MIN_INTERVAL_S", 0.0)  # a checkpoint every block

    def second_fails(self, step, *a, **k):
        if step > 5:
            raise OSError(28, "No space left on device")
        return save(self, step, *a, **k)

    monkeypatch.setattr(ocp.CheckpointManager, "save", second_fails)
    cfg = Config(**{**SMALL, "checkpoint_every": 1})
    folder = tmp_path / "checkpoints"
    with pytest.raises(OutputError) as err:
        invert(data.load(files[0]), cfg, checkpoint_dir=folder, progress=False, devices=1)
    assert str(err.value) == (
        f"cannot write checkpoint {folder / '10'}: No space left on device; step 5 is kept: "
        "free space and continue with resume=True"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["5"]


def test_a_second_ctrl_c_interrupts_at_once():
    """Inside a block the first SIGINT only sets the flag (the block finishes); the
    second raises KeyboardInterrupt at once; the handler is restored afterwards."""
    from helmholtz_pinn.fit import host_loop

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with host_loop._stop_signals() as flag:
            signal.raise_signal(signal.SIGINT)
            assert flag == ["SIGINT"]  # first: noted, nothing raised
            signal.raise_signal(signal.SIGINT)  # second: at once
            pytest.fail("the second SIGINT did not interrupt")
    assert signal.getsignal(signal.SIGINT) is before


def test_a_second_run_into_the_same_folder_is_refused_while_the_first_finishes_right(
    files, tmp_path
):
    """Two commands write one --out: the second is refused with one line naming the
    first's process (exit 2, nothing of its own written), and the first ends with the
    map the same command gives alone."""
    out, alone = tmp_path / "shared", tmp_path / "alone"
    args = [str(files[0]), *TINY, "--steps", "2000", "--sync-interval", "100"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "helmholtz_pinn.cli", "invert", *args, "--out", str(out)]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (out / LOCK_NAME).exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = subprocess.run(
            [*command[:-1], str(out), "--seed", "1"], env=env, capture_output=True, text=True
        )
        assert second.returncode == 2
        line = second.stderr.strip()
        assert "\n" not in line and f"in use by process {first.pid}" in line, line
        assert first.wait(timeout=600) == 0, first.communicate()
    finally:
        if first.poll() is None:
            first.kill()
    assert cli.main(["invert", *args, "--out", str(alone)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["seed"] == 0 and not (out / LOCK_NAME).exists()
    np.testing.assert_array_equal(np.load(out / "mu.npz")["mu"], np.load(alone / "mu.npz")["mu"])


# --- round two: --resume never replaces a result; one line for every fault --------------


@pytest.fixture(scope="module")
def finished_fit(files, tmp_path_factory):
    """A finished voigt fit with its checkpoints (test_checkpoint's compiled program)."""
    out = tmp_path_factory.mktemp("finished") / "out"
    args = ["invert", str(files[0]), "--out", str(out), "--steps", "10", *TINY]
    assert cli.main([*args, "--sync-interval", "5", "--mu-ref", "3000"]) == 0
    return out


def _resumed(out, files, *more):
    args = ["invert", str(files[0]), "--out", str(out), "--steps", "10", *TINY, "--resume"]
    return cli.main([*args, "--sync-interval", "5", "--mu-ref", "3000", *more])


@pytest.mark.parametrize("held", ["a baseline", "a --no-checkpoints fit", "another --mu-model"])
def test_resume_never_replaces_a_finished_result(held, finished_fit, files, tmp_path, capsys):
    """--resume that finds no checkpoint where it looks (none at all, or another law's
    folder) refuses with one line and leaves the result as it was."""
    out = tmp_path / "out"
    more = []
    if held == "a baseline":
        assert cli.main(["baseline", str(files[0]), "--out", str(out)]) == 0
    else:
        shutil.copytree(finished_fit, out)
    if held == "a --no-checkpoints fit":
        shutil.rmtree(out / "checkpoints")
    where = out.absolute() / "checkpoints"
    if held == "another --mu-model":  # auto keeps its checkpoints in checkpoints/<law>/
        first = laws.prior(data.load(files[0]))[0]  # the law auto fits first
        more, where = ["--mu-model", "auto"], where / first
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert _resumed(out, files, *more) == 2
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: {out} holds a finished result (mu.npz) and no "
        f"usable checkpoint in {where}: --resume continues a run and never replaces a "
        "result; pass --overwrite (without --resume) to fit afresh, or choose another --out"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_fresh_run_into_an_earlier_runs_checkpoints_needs_a_flag(files, tmp_path, capsys):
    (tmp_path / "checkpoints" / "20").mkdir(parents=True)  # an interrupted run's
    assert cli.main(["invert", str(files[0]), "--out", str(tmp_path), *TINY]) == 2
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: {tmp_path} holds an earlier run's checkpoints "
        f"({tmp_path / 'checkpoints' / '20'}): pass --resume to continue that run, "
        "--overwrite to start afresh (they are deleted once the new run has its first "
        "checkpoint), or choose another --out"
    )
    assert (tmp_path / "checkpoints" / "20").is_dir()


def test_an_unwritable_cache_or_tensorboard_folder_is_one_line(
    files, tmp_path, monkeypatch, capsys
):
    """A read-only HOME (the default compile cache): a note, and the run goes on without
    the cache; an unwritable --cache-dir or --tensorboard: one line, exit 2, no training."""
    from helmholtz_pinn.fit import compile_cache, inversion

    blocked = tmp_path / "file"
    blocked.write_text("a file where a folder would go")
    monkeypatch.setattr(compile_cache, "DEFAULT_DIR", blocked / "jax")
    cli._compile_cache(None)
    note = capsys.readouterr().err.strip()
    assert note == (
        f"note: cannot create the compile cache folder {blocked / 'jax'}: Not a directory; "
        "running without it (--cache-dir DIR gives it a folder)"
    )
    monkeypatch.setattr(compile_cache, "DEFAULT_DIR", tmp_path / "cache")
    monkeypatch.setattr(inversion, "invert", lambda *a, **k: pytest.fail("trained"))
    for option in ("--cache-dir", "--tensorboard"):
        args = ["invert", str(files[0]), "--out", str(tmp_path / option), *TINY]
        assert cli.main([*args, option, str(blocked / "sub")]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"{blocked / 'sub'}" in err and "Not a directory" in err


def test_a_baseline_larger_than_the_host_is_refused_with_one_line(
    files, tmp_path, monkeypatch, capsys
):
    from helmholtz_pinn.fit import memory

    monkeypatch.setattr(memory, "available_host_memory", lambda: 100 * 2**10)
    out = tmp_path / "out"
    assert cli.main(["baseline", str(files[0]), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "helmholtz-pinn baseline: error: a baseline on grid 12 x 12, 2 frequencies, 2 "
        "components needs 146.2 KiB of host memory, but the host has 100.0 KiB available"
    )
    assert "\n" not in err and not out.exists()


def test_a_fifo_named_npz_is_refused_not_waited_on(tmp_path, capsys):
    import threading

    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    status = []
    run = threading.Thread(
        target=lambda: status.append(cli.main(["invert", str(fifo), "--out", str(tmp_path)])),
        daemon=True,
    )
    run.start()
    run.join(timeout=60)
    assert status == [2], "invert hung on a FIFO"
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: {fifo} is not a regular file (a pipe or a device); "
        "expected an .npz file"
    )


def test_simulate_replaces_a_dataset_only_with_overwrite(tmp_path, capsys):
    out = tmp_path / "d.npz"
    out.write_bytes(b"a user's dataset")
    assert cli.main(["simulate", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn simulate: error: {out} already exists: pass --overwrite to replace it"
    )
    assert out.read_bytes() == b"a user's dataset"
    small = ["--phantom", "homogeneous", "--frequencies", "60", "--components", "1"]
    assert cli.main(["simulate", "--out", str(out), *small, "--overwrite"]) == 0
    assert data.load(out).n_freq == 1


def test_of_two_writers_of_one_dataset_the_second_is_refused(files, tmp_path, monkeypatch):
    """Another command writes the same file while this one writes it: this one is
    refused (the name is taken when its file is linked in), the other's file stays."""
    out, real = tmp_path / "d.npz", np.savez

    def other_writes_meanwhile(*args, **kwargs):
        out.write_bytes(b"the other command's dataset")
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "savez", other_writes_meanwhile)
    with pytest.raises(OutputError, match="d.npz already exists: overwrite=True replaces it"):
        data.save(data.load(files[0]), out, overwrite=False)
    assert out.read_bytes() == b"the other command's dataset"
    assert [p.name for p in tmp_path.iterdir()] == ["d.npz"]  # no partial file left


def test_a_read_only_home_gives_matplotlib_a_temporary_folder_quietly(tmp_path, monkeypatch):
    """matplotlib would print two warning lines where ~/.config cannot be written."""
    blocked = tmp_path / "file"
    blocked.write_text("HOME's .config cannot be made here")
    monkeypatch.setenv("MPLCONFIGDIR", "set by the test")
    monkeypatch.delenv("MPLCONFIGDIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocked))
    cli._matplotlib_config()
    folder = os.environ["MPLCONFIGDIR"]
    assert os.path.isdir(folder) and os.access(folder, os.W_OK)
