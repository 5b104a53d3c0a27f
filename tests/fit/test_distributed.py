"""Two processes on this machine (JAX's multi-controller runtime: ``jax.distributed``,
gloo collectives on the CPU) give the one-process result: the slices of a volume split
across the processes, and one volume fitted data parallel across them.

Each process is the CLI (``--coordinator --num-processes --process-id``) with one CPU
device. The reference is the same fit in this process on one device. Both modes do
the same arithmetic in another order (members: a vmapped batch of 2 instead of 4;
data parallel: a full batch, each process's half summed across the processes), so the
maps agree to float32 rounding (measured ~3e-7 relative; asserted 1e-5).
"""

import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

from helmholtz_pinn.cli import commands as cli

H = 1.5e-3
GRID = (8, 8, 4)  # 256 voxels, 4 z-slices
TINY = [
    *("--steps", "100", "--sync-interval", "20", "--pde-warmup", "20", "--mu-ref", "3000"),
    *("--width", "16", "--depth", "2", "--mu-width", "8", "--mu-depth", "1"),
    *("--n-features", "8", "--no-progress", "--force"),
]
MODES = {
    "members": ["--slicewise", "--batch-size", "64"],
    "data-parallel": ["--no-slicewise", "--batch-size", str(np.prod(GRID))],  # full batch
}
RTOL = 1e-5


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compilation cache for every launch here (cold at first, as on CI): the
    second launch loads what the first compiled (network initialisation, most ops)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    """A plane shear wave (60 Hz, 3 kPa) on an 8 x 8 x 4 grid, one component."""
    axes = np.meshgrid(*[np.arange(n) * H for n in GRID], indexing="ij")
    k = np.sqrt(1000 * (2 * np.pi * 60.0) ** 2 / 3000.0)
    u = np.exp(1j * k * (0.48 * axes[0] + 0.6 * axes[1] + 0.64 * axes[2]))
    path = tmp_path_factory.mktemp("data") / "volume.npz"
    np.savez(path, u=u[None, None], frequency=[60.0], spacing=[H] * 3)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args: list, outs: list, timeout: float = 240) -> list[subprocess.CompletedProcess]:
    """``helmholtz-pinn invert ARGS`` as process i of len(outs), writing to outs[i], each
    process with one CPU device; both killed if one outlives ``timeout`` s."""
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "", os.environ["XLA_FLAGS"])
    env = {
        **os.environ,
        "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count=1",
        "JAX_PLATFORMS": "cpu",
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",  # as conftest sets for this process
        "JAX_NUMPY_RANK_PROMOTION": "raise",
    }
    where = ["--coordinator", f"127.0.0.1:{_free_port()}", "--num-processes", str(len(outs))]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "helmholtz_pinn.cli", "invert", *map(str, args)]
            + [*where, "--process-id", str(i), "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i, out in enumerate(outs)
    ]
    done = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for i, proc in enumerate(done):
        assert proc.returncode == 0, f"process {i} exit {proc.returncode}: {proc.stderr[-3000:]}"
    return done


def reference(args: list):
    """What ``invert ARGS`` computes in one process on one device (the library call the
    command makes, without writing files or turning on the compilation cache here)."""
    from helmholtz_pinn.fit import inversion
    from helmholtz_pinn.io import dataset as data

    parsed = cli.parse_args(["invert", *map(str, args)])
    cfg = cli.config_from(parsed).replace(seed=parsed.seed)
    return inversion.invert(
        data.load(parsed.data[0]),
        cfg,
        slicewise=parsed.slicewise,
        devices=1,
        progress=False,
        force=parsed.force,
    )


@pytest.mark.filterwarnings(
    "ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning"
)  # 100 steps
@pytest.mark.parametrize("mode", MODES)
def test_two_processes_give_the_one_process_result(mode, volume, cache, tmp_path):
    """members: 4 slices, 2 per process, one shared output folder with its checkpoints
    (each process saves its own shards). data-parallel: one 3-D fit, the voxels split
    over the processes; process 1 gets its own --out, which must stay empty."""
    args = [volume, *MODES[mode], *TINY, "--cache-dir", cache]
    shared = mode == "members"
    outs = [tmp_path / "two"] * 2 if shared else [tmp_path / "two", tmp_path / "two_1"]
    procs = launch(args + (["--no-checkpoints"] if not shared else []), outs)
    two = outs[0]
    facts = json.loads((two / "metrics.json").read_text())
    assert (facts["parallel"], facts["devices"]) == (mode, 2)
    one = reference(args)
    with np.load(two / "mu.npz") as saved:
        assert one.mu.shape == saved["mu"].shape == (1, *GRID)  # (F, *grid)
        assert np.isfinite(saved["mu"]).all()
        np.testing.assert_allclose(saved["mu"], one.mu, rtol=RTOL)
    assert "wrote" in procs[0].stdout and "wrote" not in procs[1].stdout
    if shared:  # the two-process checkpoint was completed (not left as a temporary)
        assert (two / "checkpoints" / "100").is_dir()
    else:
        assert not any(outs[1].iterdir()), list(outs[1].iterdir())


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--coordinator", "127.0.0.1:1234"], "missing --num-processes, --process-id"),
        (["--num-processes", "2", "--process-id", "0"], "needs all three of --coordinator"),
        (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
            "--process-id 2 is outside 0 .. 1",
        ),
        (["--coordinator", "nohost"], "expected HOST:PORT"),
        (["--num-processes", "0"], "expected a positive integer; got '0'"),
    ],
)
def test_process_flags_all_three_or_none_one_line_exit_2(flags, said, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["invert", "x.npz", *flags, "--out", str(tmp_path / "o")])
    usage, error = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and usage.startswith("usage: helmholtz-pinn invert")
    assert error.startswith("helmholtz-pinn invert: error: ") and said in error
    assert not (tmp_path / "o").exists()


def test_many_processes_use_every_device(monkeypatch, four_devices):
    """Under many processes a fit spans every process's devices: devices=N < all is
    refused, and 'all' takes every device even for one small fit (no fallback to one)."""
    from helmholtz_pinn.errors import ConfigError
    from helmholtz_pinn.fit import placement

    monkeypatch.setattr(placement.jax, "process_count", lambda: 2)
    with pytest.raises(ConfigError, match="every process's devices take part: use 'all' or 4"):
        placement.plan(1, rows=100, per_voxel=12, batch_size=64)
    plan = placement.plan("all", rows=100, per_voxel=12, batch_size=64)
    assert (len(plan.devices), plan.mode) == (4, "data-parallel")
    assert (
        placement.plan("all", rows=100, per_voxel=12, batch_size=64, members=2).padded_members == 4
    )
