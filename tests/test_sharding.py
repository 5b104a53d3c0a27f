"""Multi-device training on the 4 host CPU devices of conftest's XLA_FLAGS.

Tolerances: the data-parallel step computes the same global batch mean as one device
but sums it per device and then across devices (another summation order), so results
agree to float32 rounding (measured ~2e-7 relative after 10 steps; asserted 2e-5).
"""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from settings import SMALL

from helmholtz_pinn import inversion, sharding, train
from helmholtz_pinn.config import Config
from helmholtz_pinn.data import Dataset

H, FREQS = 1.5e-3, (60.0, 90.0)
RTOL = 2e-5

four_devices = pytest.mark.skipif(
    jax.device_count() != 4, reason="needs 4 devices (conftest's XLA_FLAGS host count)"
)


def plane_wave(shape, direction, f=60.0, g=3000.0):
    axes = np.meshgrid(*[np.arange(n) * H for n in shape], indexing="ij")
    k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / g)
    return np.exp(1j * k * sum(d * a for d, a in zip(direction, axes, strict=True)))


def volume():
    """7 x 6 x 5 voxels (210: shards of 53, 53, 52, 52 on 4 devices), F = C = 1."""
    shape = (7, 6, 5)
    return Dataset(
        u=plane_wave(shape, (0.48, 0.6, 0.64))[None, None],
        frequency=np.array([60.0]),
        spacing=np.full(3, H),
        mu=np.full(shape, 3000.0 + 0j),
    )


def test_four_host_devices():
    if jax.device_count() != 4:
        pytest.skip(f"{jax.device_count()} devices; conftest asks for 4 host CPU devices")
    assert jax.device_count() == 4


@four_devices
def test_data_parallel_full_batch_equals_single_device_3d():
    """batch_size >= voxels: both runs use every voxel each step, the same math. Also the
    whole-volume (3-D) inversion itself: a 3-D network, Laplacian over x, y, z."""
    cfg = Config(**{**SMALL, "batch_size": 256})
    ds = volume()
    one = inversion.invert(ds, cfg, progress=False)
    many = sharding.invert_parallel(ds, cfg, devices=4, progress=False)
    assert one.mu.shape == many.mu.shape == (1, 7, 6, 5)
    assert many.metrics["parallel"] == "data-parallel" and many.metrics["devices"] == 4
    np.testing.assert_allclose(many.mu, one.mu, rtol=RTOL)
    for a, b in zip(many.history, one.history, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL)
    # the final map is evaluated in chunks: a small chunk gives the same map
    prep = inversion.prepare(ds, cfg)
    state = train.TrainState(one.params, one.consts, None, None, None)
    _, mu_nd = train.predict(state, prep.spec, prep.x_grid, prep.scales.omega_ratio, chunk=64)
    np.testing.assert_allclose(inversion.to_grid(mu_nd, ds) * 3000.0, one.mu, rtol=1e-6)


@four_devices
def test_data_parallel_sampling_averages_gradients():
    """Sampling (16 points per device from its own shard): with every voxel identical, any
    sample is the same batch, so the pmean of per-device gradients must equal the one
    device's gradient of its 64-point batch exactly (rounding aside)."""
    ds = Dataset(
        u=plane_wave((12, 12), (0.8, 0.6))[None, None].repeat(2, 0),
        frequency=np.asarray(FREQS),
        spacing=np.array([H, H]),
    )
    prep = inversion.prepare(ds, Config(**SMALL))
    same = prep.problem._replace(
        x=np.repeat(np.asarray(prep.problem.x)[5:6], 144, 0),
        u=np.repeat(np.asarray(prep.problem.u)[5:6], 144, 0),
    )
    state0 = train.init_state(prep.spec, 0)
    one, h1 = train.fit(
        state0, train.Problem(*map(jax.numpy.asarray, same)), prep.spec, progress=False
    )
    mesh = sharding.make_mesh(jax.devices())
    many, h4 = sharding.fit_data_parallel(state0, same, prep.spec, mesh, progress=False)
    assert sharding.local_batch_size(64, 4) == 16
    for a, b in zip(h4, h1, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL)
    for a, b in zip(jax.tree.leaves(many.params), jax.tree.leaves(one.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-6)


@four_devices
def test_member_shardings_split_the_member_axis():
    spec = train.Spec(2, 1, 1, 1.0, 1.0, Config(**SMALL))
    state = jax.device_get(train.stack_trees([train.init_state(spec, s) for s in range(8)]))
    mesh = sharding.make_mesh(jax.devices())
    placed = sharding.place(state, sharding.member_state_sharding(state, mesh))
    kernel = placed.params["u"]["out_kernel"]
    assert kernel.sharding.spec == P(sharding.AXIS)
    assert [s.data.shape[0] for s in kernel.addressable_shards] == [2, 2, 2, 2]
    assert placed.step.sharding.is_fully_replicated
    assert placed.opt_state.hyperparams["learning_rate"].sharding.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(kernel), state.params["u"]["out_kernel"])


def test_pad_members_and_trim_records():
    tree = {"a": np.arange(3.0), "b": np.ones((3, 2))}
    padded = sharding.pad_members(tree, 4)
    assert padded["a"].tolist() == [0.0, 1.0, 2.0, 2.0] and padded["b"].shape == (4, 2)
    record = {"step": 5, "loss": [1.0, 2.0, 3.0, 3.0]}
    assert sharding.trim_record(record, 3) == {"step": 5, "loss": [1.0, 2.0, 3.0]}


def test_shard_voxels_splits_valid_rows_evenly():
    problem = train.Problem(
        np.arange(10.0)[:, None],
        np.arange(10)[:, None, None] + 0j,
        np.ones(1),
        np.ones(1),
        np.asarray(10),
    )
    shards = sharding.shard_voxels(problem, 4)
    assert shards.count.tolist() == [3, 3, 2, 2] and shards.x.shape == (12, 1)
    kept = [shards.x[i * 3 : i * 3 + c, 0] for i, c in enumerate(shards.count)]
    assert sorted(np.concatenate(kept).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="3 voxels cannot be split over 4 devices"):
        sharding.shard_voxels(problem._replace(count=np.asarray(3)), 4)


@four_devices
def test_resolve_devices():
    assert len(sharding.resolve_devices(None, members=4)) == 4
    assert len(sharding.resolve_devices("all", members=3)) == 1
    assert len(sharding.resolve_devices(None, points=sharding.DP_MIN_POINTS * 4)) == 4
    assert len(sharding.resolve_devices(None, points=2048)) == 1
    assert len(sharding.resolve_devices("2", members=1)) == 2
    with pytest.raises(ValueError, match="only 4 device"):
        sharding.resolve_devices(5)
    with pytest.raises(ValueError, match="positive integer"):
        sharding.resolve_devices(0)


def test_memory_check_refuses_with_a_clear_message():
    n = 256**3
    with pytest.raises(sharding.DeviceMemoryError) as err:
        sharding.check_device_memory(n, 3, 3, 3, free_bytes=2**30)
    msg = str(err.value)
    assert "16,777,216 voxels" in msg and "84 bytes per voxel" in msg
    assert "1.31 GiB" in msg and "1.00 GiB free" in msg
    assert sharding.check_device_memory(n, 3, 3, 3, free_bytes=2**32) == 84 * n
    assert sharding.check_device_memory(n, 3, 3, 3, members=2, free_bytes=None) >= 0


def test_prepare_checks_memory_before_placing(monkeypatch):
    """invert's up-front check: prepare refuses before any array reaches the device."""
    monkeypatch.setattr(sharding, "free_device_memory", lambda device=None: 1000)
    with pytest.raises(sharding.DeviceMemoryError, match="210 voxels"):
        inversion.prepare(volume(), Config(**SMALL))
    prep = inversion.prepare(volume(), Config(**SMALL), on_device=False)
    assert isinstance(prep.problem.x, np.ndarray)


def test_initialize_distributed_needs_a_launcher(monkeypatch):
    for key in (
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "SLURM_JOB_ID",
        "SLURM_NTASKS",
        "OMPI_COMM_WORLD_SIZE",
    ):
        monkeypatch.delenv(key, raising=False)
    assert sharding.initialize_distributed() is False
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "1")  # one process: nothing to coordinate
    assert sharding.initialize_distributed() is False
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES"):
        sharding.initialize_distributed()
