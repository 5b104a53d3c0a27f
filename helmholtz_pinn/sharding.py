"""Devices: memory budget, a 1-D device mesh, member-sharded and data-parallel blocks.

Two ways to spread training over the D devices of a 1-D ``jax.sharding.Mesh``:

- *members* (many independent fits: slices, datasets, ensemble seeds): the stacked
  state and problem are split along their leading member axis, ``P("devices")``, and
  the vmapped scan block is jitted with those shardings. Members never communicate, so
  each device runs S / D of them; the math of every member is unchanged.
- *data parallel* (one large problem): the masked voxels are split into D shards, one
  per device (``shard_map``). Each step, every device draws ceil(B / D) voxels from its
  own shard (key fold_in(key, device)), and the gradient of the global batch mean is
  averaged across devices: ``lax.pmean`` of the per-device gradients when every
  device's share of the batch is equal (sampling), their share-weighted sum (``psum``)
  when the shares differ (full batch with uneven shards). Parameters and Adam's state
  stay replicated and identical on every device.

Memory: a problem holds per voxel its coordinates x (float32, d values) and the data u
(complex64, F C values): ``4 d + 8 F C`` bytes (3-D, F = 3, C = 3: 84 bytes, so 256^3
voxels take 1.4 GB). Only the problem scales with the voxel count; a step touches the
batch only. :func:`check_device_memory` refuses a problem that would not fit.
"""

from __future__ import annotations

import functools
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from helmholtz_pinn import train

AXIS = "devices"
MEMORY_FRACTION = 0.9  # share of a device's free memory the problem's arrays may take
DP_MIN_POINTS = 8192  # data parallel pays off when every device still gets this many points


class DeviceMemoryError(ValueError):
    """A problem's arrays do not fit in device memory."""


# --- memory ------------------------------------------------------------------


def bytes_per_voxel(ndim: int, n_freq: int, n_comp: int) -> int:
    """Device bytes a Problem stores per voxel: x (float32, ndim) + u (complex64, F C)."""
    return 4 * ndim + 8 * n_freq * n_comp


def free_device_memory(device: jax.Device | None = None) -> int | None:
    """Free bytes on ``device`` (default the first) from ``memory_stats()``; None where
    the backend does not report it (the CPU)."""
    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - some backends raise instead of returning None
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def check_device_memory(
    n_voxels: int,
    ndim: int,
    n_freq: int,
    n_comp: int,
    *,
    members: int = 1,
    device: jax.Device | None = None,
    free_bytes: int | None = None,
) -> int:
    """Refuse (:class:`DeviceMemoryError`) a problem whose arrays would not fit on a device.

    ``n_voxels`` rows (per member; ``members`` problems stacked on the device) need
    ``n_voxels * members * bytes_per_voxel`` bytes; they must stay under
    ``MEMORY_FRACTION`` of the free memory (``free_bytes``, else measured; no check
    where the backend reports none). Returns the bytes needed.
    """
    per_voxel = bytes_per_voxel(ndim, n_freq, n_comp)
    need = int(n_voxels) * int(members) * per_voxel
    free = free_device_memory(device) if free_bytes is None else int(free_bytes)
    if free is not None and need > MEMORY_FRACTION * free:
        where = str(device or jax.devices()[0])
        rows = f"{n_voxels:,} voxels" + (f" x {members} members" if members > 1 else "")
        raise DeviceMemoryError(
            f"the problem needs {need / 2**30:.2f} GiB on {where} for {rows} "
            f"({per_voxel} bytes per voxel: x {4 * ndim} + u {8 * n_freq * n_comp}), but "
            f"the device has {free / 2**30:.2f} GiB free (at most {MEMORY_FRACTION:.0%} "
            "may be used); spread it over more devices (devices='all' shards the voxels "
            "or members), fit fewer members at once, or crop the mask"
        )
    return need


# --- devices and meshes ---------------------------------------------------------


def resolve_devices(
    devices: int | str | None = None,
    *,
    members: int | None = None,
    points: int | None = None,
    problem_bytes: int | None = None,
) -> list:
    """The devices a run uses.

    ``devices``: an int N (the first N visible devices) or None/"all": every visible
    device when the work splits well, else one. The work is ``members`` independent
    fits (all devices when members >= the device count) or one problem of ``points``
    voxels per step and ``problem_bytes`` (all devices when every device would still get
    at least ``DP_MIN_POINTS`` points per step, or the problem does not fit one device).
    """
    visible = jax.devices()
    if devices in (None, "all"):
        n = len(visible)
        if members is not None:
            use = members >= n
        else:
            free = free_device_memory(visible[0])
            too_big = free is not None and (problem_bytes or 0) > MEMORY_FRACTION * free
            use = (points or 0) >= DP_MIN_POINTS * n or too_big
        return visible if use else visible[:1]
    if isinstance(devices, str) and devices.isdigit():
        devices = int(devices)
    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise ValueError(f"devices must be a positive integer, 'all' or None; got {devices!r}")
    if devices > len(visible):
        raise ValueError(
            f"devices={devices} but only {len(visible)} device(s) are visible: "
            f"{[str(d) for d in visible]}"
        )
    return visible[:devices]


def make_mesh(devices: list) -> Mesh:
    """A 1-D mesh with axis ``AXIS`` over ``devices``."""
    return Mesh(np.asarray(devices), (AXIS,))


def place(tree, shardings):
    """Host arrays -> global arrays with the given shardings (a matching pytree or one
    sharding for all leaves); each process fills only its addressable shards, so the
    same call works on one host and across hosts."""
    leaves, treedef = jax.tree.flatten(tree)
    if isinstance(shardings, jax.sharding.Sharding):
        shards = [shardings] * len(leaves)
    else:
        shards = treedef.flatten_up_to(shardings)
    out = []
    for leaf, sharding in zip(leaves, shards, strict=True):
        a = np.asarray(leaf)
        out.append(
            jax.make_array_from_callback(a.shape, sharding, lambda idx, a=a: np.asarray(a[idx]))
        )
    return treedef.unflatten(out)


def to_host(tree):
    """Global arrays -> NumPy on this host (gathered across processes when needed)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)


def initialize_distributed() -> bool:
    """Start multi-host JAX (one process per host) before any other JAX call.

    Reads ``JAX_COORDINATOR_ADDRESS`` (host:port of process 0), ``JAX_NUM_PROCESSES``
    and ``JAX_PROCESS_ID``; under Slurm or Open MPI with more than one task and none of
    them set, JAX detects them itself. Returns False (and does nothing) outside such an
    environment; True once initialised (a second call does nothing).
    """
    env = os.environ
    if jax.distributed.is_initialized():
        return True
    if "JAX_NUM_PROCESSES" in env or "JAX_PROCESS_ID" in env:
        missing = [
            k
            for k in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
            if k not in env
        ]
        if missing:
            raise ValueError(f"multi-host launch: set {missing} too (see docs/scaling.md)")
        jax.distributed.initialize(
            coordinator_address=env["JAX_COORDINATOR_ADDRESS"],
            num_processes=int(env["JAX_NUM_PROCESSES"]),
            process_id=int(env["JAX_PROCESS_ID"]),
        )
        return True
    tasks = env.get("SLURM_NTASKS") if "SLURM_JOB_ID" in env else None
    tasks = tasks or env.get("OMPI_COMM_WORLD_SIZE")
    if tasks is not None and tasks.isdigit() and int(tasks) > 1:
        jax.distributed.initialize()
        return True
    return False


# --- members split across devices -------------------------------------------------


def pad_members(tree, multiple: int):
    """Host pytree with a leading member axis, padded to a multiple of ``multiple`` by
    repeating the last member (extra members train too; their results are dropped)."""

    def pad(a):
        a = np.asarray(a)
        extra = -a.shape[0] % multiple
        return np.concatenate([a, np.repeat(a[-1:], extra, axis=0)]) if extra else a

    return jax.tree.map(pad, tree)


def member_state_sharding(state, mesh: Mesh):
    """Shardings of a stacked TrainState: members split along ``AXIS``; the step and the
    optimizer's hyperparameters (read and set by the host loop) replicated."""
    split, whole = NamedSharding(mesh, P(AXIS)), NamedSharding(mesh, P())
    sh = jax.tree.map(lambda _: split, state)
    hyper = jax.tree.map(lambda _: whole, state.opt_state.hyperparams)
    return sh._replace(step=whole, opt_state=sh.opt_state._replace(hyperparams=hyper))


@functools.lru_cache(maxsize=16)
def make_member_block(spec: train.Spec, n_steps: int, batched: str, mesh: Mesh):
    """The vmapped block of :func:`helmholtz_pinn.train.make_block` jitted with the
    members split across ``mesh``: ``batched`` "stacked" splits the problems too,
    "shared" replicates the one problem. The losses come back replicated."""
    if batched not in ("stacked", "shared"):
        raise ValueError(f"batched must be 'stacked' or 'shared'; got {batched!r}")
    template = jax.eval_shape(lambda: train.init_state(spec, 0))
    state_sh = member_state_sharding(template, mesh)
    problem_sh = NamedSharding(mesh, P(AXIS) if batched == "stacked" else P())
    block = train.block_fn(spec, n_steps, batched)
    return jax.jit(
        block,
        in_shardings=(state_sh, problem_sh),
        out_shardings=(state_sh, NamedSharding(mesh, P())),
    )


def place_members(state, problem, spec: train.Spec, mesh: Mesh, batched: str = "stacked"):
    """(state, problem, block) ready to run S members split across ``mesh``: host pytrees
    with a leading member axis (``problem`` without one for "shared"), padded to a
    multiple of the device count (:func:`pad_members`) and placed; the block is
    :func:`make_member_block`."""
    n = mesh.devices.size
    state = pad_members(jax.device_get(state), n)
    if batched == "stacked":
        problem = pad_members(jax.device_get(problem), n)
    problem_sh = NamedSharding(mesh, P(AXIS) if batched == "stacked" else P())
    block = make_member_block(spec, spec.cfg.sync_interval, batched, mesh)
    return (place(state, member_state_sharding(state, mesh)), place(problem, problem_sh), block)


def fit_members(
    state, problem, spec: train.Spec, mesh: Mesh, *, batched: str = "stacked", **fit_kwargs
):
    """:func:`helmholtz_pinn.train.fit` of S stacked members split across ``mesh`` (see
    :func:`place_members`). Returns the host state of the S members and the history
    (records trimmed to S values)."""
    members = int(np.shape(state.step)[0])
    state, problem, block = place_members(state, problem, spec, mesh, batched)
    callback = fit_kwargs.get("callback")
    if callback is not None:  # it sees the S members, not the padding
        fit_kwargs["callback"] = lambda record: callback(trim_record(record, members))
    state, history = train.fit(state, problem, spec, batched=batched, block=block, **fit_kwargs)
    state = jax.tree.map(lambda a: a[:members], to_host(state))
    return state, [trim_record(r, members) for r in history]


def trim_record(record: dict, members: int) -> dict:
    """A batched history record with its per-member lists cut to the first ``members``."""
    return train.member_record(record, slice(0, members))


# --- data parallel: one problem, voxels split across devices ------------------------


def shard_voxels(problem: train.Problem, n: int) -> train.Problem:
    """Host Problem -> D = ``n`` shards stacked along the rows: the valid rows split into
    D near-equal parts (each padded to m = ceil(M / D) rows), ``count`` (D,) per shard."""
    x, u = np.asarray(problem.x), np.asarray(problem.u)
    count = int(problem.count)
    if count < n:
        raise ValueError(
            f"a problem of {count} voxels cannot be split over {n} devices; use fewer devices"
        )
    m = math.ceil(count / n)
    parts = np.array_split(np.arange(count), n)

    def rows(a):
        out = np.zeros((n * m,) + a.shape[1:], a.dtype)
        for i, idx in enumerate(parts):
            out[i * m : i * m + len(idx)] = a[idx]
        return out

    counts = np.array([len(idx) for idx in parts], np.int32)
    return train.Problem(
        rows(x), rows(u), np.asarray(problem.kappa), np.asarray(problem.omega_ratio), counts
    )


def _shard_map(fn, mesh, in_specs, out_specs):
    """``jax.shard_map`` (JAX >= 0.6) or ``jax.experimental.shard_map.shard_map``, with the
    collectives written out (no automatic replication checks)."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    from jax.experimental.shard_map import shard_map

    return shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def data_parallel_step(
    state: train.TrainState, local: train.Problem, spec: train.Spec, local_batch: int
) -> tuple[train.TrainState, jax.Array]:
    """One step inside ``shard_map``: sample from this device's shard, take the gradient of
    its batch mean, average the gradients across devices, apply Adam (same on all)."""
    cfg = spec.cfg
    local = local._replace(count=local.count[0])
    key = jax.random.fold_in(state.key, jax.lax.axis_index(AXIS))
    x, u_obs, weight = train.sample_batch(local, key, state.step, local_batch)
    w = train.pde_weight(state.step, cfg)

    def loss_fn(params):
        data, pde = train.loss_terms(params, state.consts, spec, local, x, u_obs, weight)
        return data + w * pde, (data, pde)

    (loss, (data, pde)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    losses = jnp.stack([loss, data, pde])
    if local_batch < local.x.shape[0]:  # sampling: every device holds local_batch points
        grads, losses = jax.lax.pmean((grads, losses), AXIS)
    else:  # full batch: weight each device by its share of the valid rows
        wsum = jnp.sum(weight)
        share = wsum / jax.lax.psum(wsum, AXIS)
        grads, losses = jax.lax.psum(jax.tree.map(lambda g: share * g, (grads, losses)), AXIS)
    updates, opt_state = train.make_optimizer(cfg).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return train.TrainState(params, state.consts, opt_state, state.step + 1, state.key), losses


def _problem_specs() -> train.Problem:
    return train.Problem(P(AXIS), P(AXIS), P(), P(), P(AXIS))


@functools.lru_cache(maxsize=16)
def make_data_parallel_block(spec: train.Spec, n_steps: int, local_batch: int, mesh: Mesh):
    """``(state, problem) -> (state, losses (n_steps, 3))``: a scan of
    :func:`data_parallel_step` in one ``shard_map`` over ``mesh``, jitted with the state
    replicated and the problem's rows split (see :func:`shard_voxels`)."""

    def block(state, problem):
        return jax.lax.scan(
            lambda s, _: data_parallel_step(s, problem, spec, local_batch), state, None, n_steps
        )

    fn = _shard_map(block, mesh, in_specs=(P(), _problem_specs()), out_specs=(P(), P()))
    whole = NamedSharding(mesh, P())
    problem_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), _problem_specs())
    return jax.jit(fn, in_shardings=(whole, problem_sh), out_shardings=(whole, whole))


def local_batch_size(batch_size: int, n: int) -> int:
    """Points per device per step: ceil(B / D), so the global batch is at least B."""
    return math.ceil(batch_size / n)


def place_data_parallel(
    state: train.TrainState, problem: train.Problem, spec: train.Spec, mesh: Mesh
):
    """(state, problem, block) ready for a data-parallel fit over ``mesh``: the state
    replicated, the host problem's voxels split (:func:`shard_voxels`, after a check that
    a shard fits a device), the block :func:`make_data_parallel_block`."""
    n = mesh.devices.size
    sharded = shard_voxels(problem, n)
    _, d = sharded.x.shape
    _, n_freq, n_comp = sharded.u.shape
    check_device_memory(sharded.x.shape[0] // n, d, n_freq, n_comp, device=mesh.devices.flat[0])
    local = local_batch_size(spec.cfg.batch_size, n)
    block = make_data_parallel_block(spec, spec.cfg.sync_interval, local, mesh)
    problem_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), _problem_specs())
    return (
        place(jax.device_get(state), NamedSharding(mesh, P())),
        place(sharded, problem_sh),
        block,
    )


def fit_data_parallel(
    state: train.TrainState, problem: train.Problem, spec: train.Spec, mesh: Mesh, **fit_kwargs
):
    """:func:`helmholtz_pinn.train.fit` of one problem with its voxels split across
    ``mesh`` (see the module docstring). ``problem`` is a host Problem; the global batch
    is D ceil(B / D) points. Returns the host state and the history."""
    state, problem, block = place_data_parallel(state, problem, spec, mesh)
    state, history = train.fit(state, problem, spec, block=block, **fit_kwargs)
    return to_host(state), history


def invert_parallel(
    dataset,
    config=None,
    *,
    devices: int | str | None = None,
    progress: bool = True,
    callback=None,
    checkpoint_dir=None,
    resume: bool = False,
    **overrides,
):
    """:func:`helmholtz_pinn.inversion.invert` over several devices.

    One fit (``ensemble`` 1) is data parallel over the voxels; an ensemble of E seeds is
    split across the devices by member. ``devices``: see :func:`resolve_devices`; with
    one device this is ``invert`` itself (with ``checkpoint_dir``/``resume``). The
    multi-device paths write no checkpoints (a warning says so) and refuse ``resume``.
    """
    import time
    import warnings

    from helmholtz_pinn import inversion
    from helmholtz_pinn.config import Config

    cfg = (config or Config()).replace(**overrides)
    count = int(np.asarray(dataset.mask).sum())
    per_voxel = bytes_per_voxel(dataset.ndim, dataset.n_freq, dataset.n_comp)
    if cfg.ensemble > 1:
        chosen = resolve_devices(devices, members=cfg.ensemble)
    else:
        chosen = resolve_devices(
            devices, points=min(cfg.batch_size, count), problem_bytes=count * per_voxel
        )
    if len(chosen) == 1:
        return inversion.invert(
            dataset,
            cfg,
            progress=progress,
            callback=callback,
            checkpoint_dir=checkpoint_dir,
            resume=resume,
        )
    if resume:
        raise ValueError(
            f"resume needs a one-device run (checkpoints); this run would use "
            f"{len(chosen)} devices: pass devices=1"
        )
    if checkpoint_dir is not None:
        warnings.warn(f"no checkpoints are written by a {len(chosen)}-device run", stacklevel=2)
    t0 = time.perf_counter()
    prep = inversion.prepare(dataset, cfg, on_device=False)
    mesh = make_mesh(chosen)
    kwargs = dict(progress=progress, callback=callback)
    if cfg.ensemble > 1:
        state = train.init_members(prep.spec, cfg.seed, cfg.ensemble)
        state, history = fit_members(
            state, prep.problem, prep.spec, mesh, batched="shared", **kwargs
        )
        mode = "ensemble-sharded"
    else:
        state, history = fit_data_parallel(
            train.init_state(prep.spec, cfg.seed), prep.problem, prep.spec, mesh, **kwargs
        )
        mode = "data-parallel"
    return inversion.build_result(
        dataset, cfg, prep, state, history, t0, devices=len(chosen), parallel=mode
    )
