"""Device layouts on the 4 forced host CPU devices (conftest): data parallel, members.

Tolerances: the data-parallel step computes the same global batch mean as one device
but sums it per device and then across devices (another summation order), so results
agree to float32 rounding (measured ~2e-7 relative after 10 steps; asserted 2e-5).
"""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from settings import SMALL, plane_wave_volume, volume

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, DeviceMemoryError
from helmholtz_pinn.fit import inversion, memory, placement
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.chunks import to_grid
from helmholtz_pinn.fit.plan import prepare_one, program
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import forms, train
from helmholtz_pinn.pinn.predict import predict

H, FREQS = 1.5e-3, (60.0, 90.0)
RTOL = 2e-5


def test_data_parallel_full_batch_equals_single_device_3d(four_devices):
    """batch_size >= voxels: both runs use every voxel each step, the same math. Also the
    whole-volume (3-D) inversion itself: a 3-D network, Laplacian over x, y, z."""
    cfg = Config(**{**SMALL, "batch_size": 256})
    ds = volume()
    one = inversion.invert(ds, cfg, devices=1, progress=False)
    many = inversion.invert(ds, cfg, devices=4, progress=False)
    assert one.mu.shape == many.mu.shape == (1, 7, 6, 5)
    assert many.metrics["parallel"] == "data-parallel" and many.metrics["devices"] == 4
    assert one.metrics["parallel"] == "single"
    np.testing.assert_allclose(many.mu, one.mu, rtol=RTOL)
    for a, b in zip(many.history, one.history, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL)
    # the final map is evaluated in chunks: a small chunk gives the same map
    prep = prepare_one(ds, cfg)
    state = train.TrainState(one.params, one.consts, None, None, None)
    _, mu_nd = predict(state, prep.spec, prep.x_grid, prep.scales.omega_ratio, chunk=64)
    np.testing.assert_allclose(to_grid(mu_nd, ds) * 3000.0, one.mu, rtol=1e-6)


def test_data_parallel_sampling_sums_the_device_gradients(four_devices):
    """Sampling (16 points per device from its own shard): with every voxel identical, any
    sample is the same batch, so the sum of the per-device shares of the gradient must
    equal the one device's gradient of its 64-point batch (rounding aside)."""
    ds = Dataset(
        u=plane_wave_volume((12, 12), (0.8, 0.6))[None, None].repeat(2, 0),
        frequency=np.asarray(FREQS),
        spacing=np.array([H, H]),
    )
    cfg = Config(**SMALL)
    prep = prepare_one(ds, cfg)
    same = prep.problem._replace(
        x=np.repeat(prep.problem.x[5:6], 144, 0), u=np.repeat(prep.problem.u[5:6], 144, 0)
    )
    form = forms.get(forms.resolve(cfg.pde, ds.n_comp))
    fit = run_plan.plan([ds], cfg, form=form, devices=1)  # the Adam steps and the schedule
    rate = fit.config.learning_rate
    state0 = jax.device_get(train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, rate))
    results = []
    for plan in (
        placement.Placement(tuple(four_devices[:1])),
        placement.Placement(tuple(four_devices), 0, False, True),
    ):
        block = placement.compile_block(prep.spec, 5, plan)
        state, problem = placement.place(state0, same, plan)
        from helmholtz_pinn.fit import host_loop

        state, hist = host_loop.run(state, problem, block, fit, progress=False)
        results.append((placement.gather(state, plan), hist))
    (one, h1), (many, h4) = results
    for a, b in zip(h4, h1, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL)
    for a, b in zip(jax.tree.leaves(many.params), jax.tree.leaves(one.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-6)


def test_member_layout_splits_the_member_axis(four_devices):
    prep = prepare_one(volume(), Config(**SMALL))
    seeds = [train.init_state(prep.spec, s, 1.0, 1.0, 1e-3) for s in range(8)]
    state = train.stack_trees(seeds)
    plan = placement.Placement(tuple(four_devices), members=8)
    placed, _ = placement.place(state, train.stack_trees([prep.problem] * 8), plan)
    kernel = placed.params["u"]["out_kernel"]
    assert kernel.sharding.spec == P(placement.AXIS)
    assert [s.data.shape[0] for s in kernel.addressable_shards] == [2, 2, 2, 2]
    assert placed.step.sharding.is_fully_replicated
    assert placed.opt_state.hyperparams["learning_rate"].sharding.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(kernel), state.params["u"]["out_kernel"])


def test_ensemble_on_four_devices_equals_one_device(four_devices):
    """E = 3 seeds, padded to 4 members on 4 devices (the copy is dropped again). The slice
    axis's scale is given, so that at least two seeds end within ensemble_keep of the
    best on this tiny volume and the spread is compared too."""
    ds = volume()
    cfg = Config(**SMALL, ensemble=3, sigma_ratio_z=0.25)
    one = inversion.invert(ds, cfg, devices=1, progress=False)
    many = inversion.invert(ds, cfg, devices=4, progress=False)
    assert many.metrics["parallel"] == "ensemble" and many.metrics["devices"] == 4
    assert len(many.history[-1]["loss"]) == 3
    np.testing.assert_allclose(many.mu, one.mu, rtol=RTOL)
    assert one.mu_std is not None
    np.testing.assert_allclose(many.mu_std, one.mu_std, rtol=1e-3, atol=1e-3)


def test_pad_members_and_shard_voxels():
    tree = {"a": np.arange(3.0), "b": np.ones((3, 2))}
    padded = placement.pad_members(tree, 4)
    assert padded["a"].tolist() == [0.0, 1.0, 2.0, 2.0] and padded["b"].shape == (4, 2)
    problem = train.Problem(
        np.arange(10.0)[:, None],
        np.arange(10)[:, None, None] + 0j,
        np.ones(1),
        np.ones(1),
        np.asarray(10),
        np.ones((1, 1)),
        np.ones((1, 1)),
        np.arange(10.0) + 100,
    )
    shards = placement.shard_voxels(problem, 4)
    assert shards.count.tolist() == [3, 3, 2, 2] and shards.x.shape == (12, 1)
    # the PDE rows move with their voxels
    np.testing.assert_array_equal(shards.pde[shards.pde > 0] - 100, np.arange(10.0))
    kept = [shards.x[i * 3 : i * 3 + c, 0] for i, c in enumerate(shards.count)]
    assert sorted(np.concatenate(kept).tolist()) == list(range(10))


def test_plan_chooses_devices(four_devices):
    def plan(devices, **kw):
        return placement.plan(devices, **{"rows": 100, "per_voxel": 84, "batch_size": 64, **kw})

    assert len(plan(None, members=4).devices) == 4
    assert len(plan("all", members=3).devices) == 1
    big = plan(None, rows=placement.DP_MIN_POINTS * 4, batch_size=placement.DP_MIN_POINTS * 4)
    assert big.data_parallel and len(big.devices) == 4
    assert plan(None, batch_size=2048).mode == "single"
    assert len(plan("2", members=1).devices) == 2
    with pytest.raises(ConfigError, match="only 4 device"):
        plan(5)
    with pytest.raises(ConfigError, match="positive integer"):
        plan(0)
    with pytest.raises(ConfigError, match="3 voxels cannot be split over 4 devices"):
        plan(4, rows=3)


def test_memory_check_refuses_with_a_clear_message(monkeypatch):
    n = 256**3
    with pytest.raises(DeviceMemoryError) as err:
        placement.check_device_memory(n, 84, free_bytes=2**30)
    msg = str(err.value)
    assert "16,777,216 voxel rows" in msg and "84 bytes each" in msg
    assert "1.31 GiB" in msg and "1.00 GiB free" in msg
    assert placement.check_device_memory(n, 84, free_bytes=2**32) == 84 * n
    # invert plans (and refuses) before any array reaches the device
    monkeypatch.setattr(memory, "free_device_memory", lambda device=None: 1000)
    with pytest.raises(DeviceMemoryError, match="210 voxel rows"):
        inversion.invert(volume(), Config(**SMALL), devices=1, progress=False)


def test_bytes_per_voxel_matches_the_problem():
    """x float32 (d) + u complex64 (F C): 3-D, F = C = 3 is 84 bytes per voxel."""
    assert memory.bytes_per_voxel(3, 3, 3) == 84
    prep = prepare_one(volume(), Config(**SMALL))
    assert prep.problem.x.nbytes + prep.problem.u.nbytes == 210 * memory.bytes_per_voxel(3, 1, 1)


def test_initialize_distributed_needs_a_launcher(monkeypatch):
    for key in (
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "SLURM_JOB_ID",
        "SLURM_NTASKS",
        "SLURM_STEP_NUM_TASKS",
        "OMPI_COMM_WORLD_SIZE",
    ):
        monkeypatch.delenv(key, raising=False)
    assert placement.initialize_distributed() is False
    monkeypatch.setenv("SLURM_JOB_ID", "7")  # an sbatch script of 4 tasks, before srun:
    monkeypatch.setenv("SLURM_NTASKS", "4")  # it runs alone, so nothing to coordinate
    assert placement.initialize_distributed() is False
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "1")  # one process: nothing to coordinate
    assert placement.initialize_distributed() is False
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    with pytest.raises(ConfigError, match="JAX_NUM_PROCESSES"):
        placement.initialize_distributed()


def test_large_batches_and_volumes_get_cublas_gemms_on_a_gpu_only(monkeypatch):
    """The GEMM choice follows the batch per device, the dimension and the backend (the rule of
    docs/performance.md); on the CPU a block gets no XLA options at all."""
    from helmholtz_pinn.config import Config
    from helmholtz_pinn.fit import placement
    from helmholtz_pinn.pinn import compile_options

    def spec(batch):
        return program(Config(batch_size=batch), 2, 1, 1)

    points = compile_options.CUBLAS_MIN_POINTS
    big, small = spec(points), spec(points - 1)
    assert placement.compiler_options(big) == {}  # this test runs on the CPU
    monkeypatch.setattr(compile_options.jax, "default_backend", lambda: "gpu")
    assert placement.compiler_options(big) == {"xla_gpu_enable_triton_gemm": False}
    assert placement.compiler_options(small) == {}
    volume = program(Config(batch_size=64), 3, 1, 3)  # every 3-D block: cuBLAS
    assert placement.compiler_options(volume) == {"xla_gpu_enable_triton_gemm": False}
