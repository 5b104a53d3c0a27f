"""Devices: plan where a fit runs (a :class:`Placement`), place its arrays, compile its programs.

One 1-D ``jax.sharding.Mesh`` over D devices, used in one of two ways:

- *members* (independent fits: slices, datasets, ensemble seeds): the stacked state and
  problem are split along their leading member axis, ``P("devices")``; members never
  communicate, so each device runs S / D of them with unchanged math.
- *data parallel* (one large problem): the masked voxels are split into D shards, one
  per device, under ``shard_map``; every device draws ceil(B / D) voxels per step from
  its shard and the gradient of the global batch mean is summed across devices
  (:func:`helmholtz_pinn.pinn.train.train_step` with ``axis_name``). Parameters and Adam's
  state stay replicated.

Memory (:mod:`helmholtz_pinn.fit.memory`): :func:`plan` refuses a placement whose problem
would not fit (:func:`check_device_memory`).

This module owns no entry point and no training step: :func:`compile_block` applies a
placement to the one block of :func:`helmholtz_pinn.pinn.train.block_fn`, and
:func:`lbfgs_ahead` compiles the L-BFGS phase in the background while that block trains;
:func:`tf32_steps` decides the precision schedule on a placement and :class:`Scheduled`
runs the block's TF32 program before that step and its float32 one after.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
from concurrent.futures import Future
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, DeviceMemoryError
from helmholtz_pinn.fit import memory
from helmholtz_pinn.pinn import compile_options, lbfgs, programs, train

AXIS = "devices"
DP_MIN_POINTS = 8192  # data parallel pays off when every device still gets this many points


class Placement(NamedTuple):
    """Where and how a fit runs.

    devices: the devices (a 1-D mesh over them when more than one).
    members: independent fits stacked on a leading axis (0: one fit, no member axis),
      padded to a multiple of the device count when split across devices.
    shared_problem: the members share one problem (an ensemble of seeds).
    data_parallel: one fit with its voxels split across the devices.
    """

    devices: tuple
    members: int = 0
    shared_problem: bool = False
    data_parallel: bool = False

    @property
    def mesh(self) -> Mesh:
        return Mesh(np.asarray(self.devices), (AXIS,))

    @property
    def padded_members(self) -> int:
        """Members after padding to a multiple of the device count (0 for no axis)."""
        return self.members and -(-self.members // len(self.devices)) * len(self.devices)

    @property
    def mode(self) -> str:
        """One word for ``metrics.json``."""
        if self.data_parallel:
            return "data-parallel"
        if not self.members:
            return "single"
        return "ensemble" if self.shared_problem else "members"


# --- planning --------------------------------------------------------------------


def plan(
    devices: int | str | None,
    *,
    rows: int,
    per_voxel: int,
    batch_size: int,
    patch_size: int = 1,
    members: int = 0,
    shared_problem: bool = False,
) -> Placement:
    """The one planning function: which devices, and split by member or by voxel.

    ``devices``: an int N (the first N visible devices) or None/"all": every visible
    device when the work splits well, else one: ``members`` >= the device count, or
    (one fit) every device still drawing ``DP_MIN_POINTS`` points per step, or a problem
    that does not fit one device. Under many processes (:func:`initialize_distributed`)
    every device of every process takes part: ``devices`` must be None/"all" or their
    number. ``rows`` voxel rows per problem of ``per_voxel`` bytes; a step reads
    ``patch_size`` network points per sampled voxel (a weak form's patch). The memory needed
    per device is checked here (on this process's first device).
    """
    visible = jax.devices()
    stacked = members if members and not shared_problem else 1
    if jax.process_count() > 1:
        if devices not in (None, "all", len(visible), str(len(visible))):
            raise ConfigError(
                f"devices={devices!r}, but under {jax.process_count()} processes every "
                f"process's devices take part: use 'all' or {len(visible)}"
            )
        devices = len(visible)
    if devices in (None, "all"):
        n = len(visible)
        if members:
            use = members >= n
        else:
            free = memory.free_device_memory(visible[0])
            too_big = free is not None and rows * per_voxel > memory.MEMORY_FRACTION * free
            use = min(batch_size, rows) * patch_size >= DP_MIN_POINTS * n or too_big
        chosen = visible if use else visible[:1]
    else:
        if isinstance(devices, str) and devices.isdigit():
            devices = int(devices)
        if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
            raise ConfigError(f"devices must be a positive integer, 'all' or None; got {devices!r}")
        if devices > len(visible):
            raise ConfigError(
                f"devices={devices} but only {len(visible)} device(s) are visible: "
                f"{[str(d) for d in visible]}"
            )
        chosen = visible[:devices]
    n = len(chosen)
    data_parallel = n > 1 and not members
    if data_parallel and rows < n:
        raise ConfigError(f"a problem of {rows} voxels cannot be split over {n} devices")
    per_device = math.ceil(rows / n) if data_parallel else rows * math.ceil(stacked / n)
    check_device_memory(per_device, per_voxel, device=jax.local_devices()[0])
    return Placement(tuple(chosen), members, shared_problem, data_parallel)


def check_device_memory(
    rows: int, per_voxel: int, *, device: jax.Device | None = None, free_bytes: int | None = None
) -> int:
    """Refuse (:class:`DeviceMemoryError`) ``rows`` voxel rows of ``per_voxel`` bytes on one
    device above :data:`helmholtz_pinn.fit.memory.MEMORY_FRACTION` of its free memory
    (``free_bytes``, else measured; no check where the backend reports none). Returns the
    bytes needed."""
    fraction = memory.MEMORY_FRACTION
    need = int(rows) * int(per_voxel)
    free = memory.free_device_memory(device) if free_bytes is None else int(free_bytes)
    if free is not None and need > fraction * free:
        raise DeviceMemoryError(
            f"the problem needs {need / 2**30:.2f} GiB on {device or jax.devices()[0]} for "
            f"{rows:,} voxel rows ({per_voxel} bytes each), but the device has "
            f"{free / 2**30:.2f} GiB free (at most {fraction:.0%} may be used); spread "
            "it over more devices (devices='all' shards the voxels or members), fit fewer "
            "members at once, or crop the mask"
        )
    return need


# --- shardings, placement, the compiled block -------------------------------------


def _problem_axes(placement: Placement) -> train.Problem:
    """PartitionSpecs of a Problem: rows split (data parallel) or members split."""
    if placement.data_parallel:
        return train.Problem(P(AXIS), P(AXIS), P(), P(), P(AXIS), P(), P(), P(AXIS))
    split = P() if placement.shared_problem or not placement.members else P(AXIS)
    return train.Problem(*[split] * len(train.Problem._fields))


def _state_axes(state, placement: Placement):
    """PartitionSpecs of a state: members split along ``AXIS``, except the step and the
    optimizer's hyperparameters (read and set by the host loop), which are replicated."""
    if not placement.members:
        return jax.tree.map(lambda _: P(), state)
    axes = jax.tree.map(lambda _: P(AXIS), state)
    hyper = jax.tree.map(lambda _: P(), state.opt_state.hyperparams)
    return axes._replace(step=P(), opt_state=axes.opt_state._replace(hyperparams=hyper))


def _named(axes, mesh: Mesh):
    return jax.tree.map(lambda s: NamedSharding(mesh, s), axes, is_leaf=lambda s: isinstance(s, P))


def compiler_options(spec: train.Spec) -> dict:
    """XLA options of a block: :func:`helmholtz_pinn.pinn.compile_options.gemm_options` of
    its network points per step (batch x patch) and dimension (cuBLAS GEMMs on a GPU for
    large batches and volumes)."""
    return compile_options.gemm_options(spec.batch_size * spec.patch_size, spec.ndim)


@functools.lru_cache(maxsize=32)
def compile_block(spec: train.Spec, n_steps: int, placement: Placement):
    """The jitted block of ``n_steps`` steps for ``placement`` as a
    :class:`helmholtz_pinn.pinn.programs.Program` (on one device a later process loads it
    without tracing), cached on (spec, n_steps, placement): a new seed, step count or
    learning rate reuses the compiled program."""
    if len(placement.devices) == 1:
        members, shared = bool(placement.members), placement.shared_problem
        return programs.Program(
            train.block_fn(spec, n_steps, members=members, shared_problem=shared),
            compiler_options(spec),
            key=("block", spec, n_steps, members, shared),
        )
    mesh = placement.mesh
    whole = NamedSharding(mesh, P())
    if placement.data_parallel:
        local = dataclasses.replace(spec, batch_size=math.ceil(spec.batch_size / mesh.size))
        block = train.block_fn(local, n_steps, axis_name=AXIS)
        axes = _problem_axes(placement)
        fn = _shard_map(block, mesh, in_specs=(P(), axes), out_specs=(P(), P()))
        return programs.Program(
            fn,
            compiler_options(local),
            in_shardings=(whole, _named(axes, mesh)),
            out_shardings=(whole, whole),
        )
    block = train.block_fn(spec, n_steps, members=True, shared_problem=placement.shared_problem)
    template = jax.eval_shape(lambda: train.init_state(spec, 0, 1.0, 1.0, 1.0))
    state_sh = _named(_state_axes(template, placement), mesh)
    problem_sh = _named(_problem_axes(placement), mesh)
    return programs.Program(
        block,
        compiler_options(spec),
        in_shardings=(state_sh, problem_sh),
        out_shardings=(state_sh, whole),
    )


TF32 = "tensorfloat32"
# TF32 matmuls (Config.tf32_steps None): every Adam step when an L-BFGS phase follows
# (the phase, in float32, ends the fit; the map was unchanged within the run-to-run
# spread); none in a fit of Adam alone (half its steps in TF32 blurred the smallest target
# of a noisy organ). Why: docs/defaults.md.


SPLIT_F32 = "BF16_BF16_F32_X3"
SPLIT_MIN_WIDTH = 512
# The float32 Adam blocks of networks 512 wide or more (a fit of Adam alone, or the blocks
# after its TF32 steps) run each matmul as three bfloat16 products on a GPU's tensor
# cores: a relative error of about 2e-5 (float32 1e-7, TF32 1e-3), faster steps and the
# same map; on 256-wide networks no faster. The L-BFGS phase, the map, the law's judgement
# and the checks stay float32 ("highest"): in the phase the split products moved a map.
# Why: docs/performance.md.


def float32_algorithm(width: int, split: bool) -> str | None:
    """The matmul algorithm of a fit's float32 Adam blocks (without or after TF32 steps):
    :data:`SPLIT_F32` where ``split`` (a GPU, no precision set by the user: as for TF32)
    and the u-network is at least :data:`SPLIT_MIN_WIDTH` wide, else None (float32,
    "highest")."""
    return SPLIT_F32 if split and width >= SPLIT_MIN_WIDTH else None


def tf32_steps(cfg: Config, steps: int, lbfgs: int, lbfgs_runs: bool, tf32: bool) -> int:
    """The Adam steps in TF32: ``tf32_steps`` as asked, None: every Adam step (``steps``)
    when an L-BFGS phase follows, else 0; 0 where TF32 does not apply (``tf32`` False:
    not on a GPU, whose CPU matmuls are float32 at any precision, or where the user set
    ``jax_default_matmul_precision``) and where an asked-for phase cannot run (several
    devices: nothing in float32 would end the fit)."""
    if not tf32 or (lbfgs and not lbfgs_runs):
        return 0
    if cfg.tf32_steps is None:
        return steps if lbfgs else 0
    return cfg.tf32_steps


@dataclasses.dataclass(frozen=True)
class Scheduled:
    """A compiled ``block`` run with TF32 matmuls (``jax.default_matmul_precision``) while
    the state's step is below ``tf32_steps``, in float32 from there on (``float32``: the
    algorithm, :func:`float32_algorithm`; None: "highest"): two programs (jit keys on the
    precision), the second compiled when first needed or ahead (:meth:`float32_ahead`)."""

    block: object
    tf32_steps: int
    float32: str | None = None

    def _precision(self, state):
        if not self.tf32_steps:  # one program: no step to read back
            return jax.default_matmul_precision(self.float32)
        step = int(np.asarray(jax.device_get(state.step)).max())
        return jax.default_matmul_precision(TF32 if step < self.tf32_steps else self.float32)

    def __call__(self, state, problem):
        with self._precision(state):
            return self.block(state, problem)

    def lower(self, state, problem):
        """The program that the next call with these arguments runs, lowered."""
        with self._precision(state):
            return self.block.lower(state, problem)

    def compiled(self, state, problem):
        """The program that the next call with these arguments runs, compiled
        (:meth:`helmholtz_pinn.pinn.programs.Program.compiled`)."""
        with self._precision(state):
            return self.block.compiled(state, problem)

    def float32_ahead(self, state, problem) -> Future:
        """Start compiling the float32 program (the blocks from ``tf32_steps`` on) for the
        shapes and placement of ``state`` and ``problem`` in a background thread, while
        the TF32 blocks train; returns its Future (the block then finds it compiled)."""
        shapes = jax.tree.map(_abstract, (state, problem))

        def work():
            with jax.default_matmul_precision(self.float32):
                return self.block.compiled(*shapes)

        return in_background(work, "helmholtz-pinn-compile")


@functools.lru_cache(maxsize=8)
def compile_lbfgs(spec: train.Spec, n_iter: int, points: int, placement: Placement):
    """The jitted L-BFGS phase (:func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn`) on one device
    (XLA options: :func:`helmholtz_pinn.pinn.compile_options.phase_options`)."""
    members, shared = bool(placement.members), placement.shared_problem
    fn = lbfgs.lbfgs_fn(spec, n_iter, points, members=members, shared_problem=shared)
    key = ("lbfgs", spec, n_iter, points, members, shared)
    return programs.Program(fn, compile_options.phase_options(), key=key)


def lbfgs_ahead(spec: train.Spec, n_iter: int, points: int, placement: Placement, state, problem):
    """Start compiling the L-BFGS phase (:func:`compile_lbfgs`) for the shapes and
    placement of ``state`` and ``problem`` in a background thread; returns a
    ``concurrent.futures.Future`` whose result is the compiled program (called with
    arrays of those shapes). Started before the Adam phase, the compile (tens of seconds
    on a GPU into an empty cache) runs while Adam trains instead of after it."""
    jitted = compile_lbfgs(spec, n_iter, points, placement)
    shapes = jax.tree.map(_abstract, (state, problem))
    precision = jax.config.jax_default_matmul_precision  # a `with` setting is per thread

    def work():
        with jax.default_matmul_precision(precision):
            return jitted.compiled(*shapes)

    return in_background(work, "helmholtz-pinn-compile")


def _abstract(a: jax.Array) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding, weak_type=a.weak_type)


def in_background(work, name: str) -> Future:
    """``work()`` in a daemon thread called ``name`` (an interrupted run does not wait for
    it to end); its result or error in the Future returned."""
    future: Future = Future()

    def run():
        try:
            future.set_result(work())
        except BaseException as error:  # handed to whoever waits for the result
            future.set_exception(error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def place(state, problem, placement: Placement):
    """Host (state, problem) -> device arrays for ``placement``: members padded to a multiple
    of the device count and split, or voxels split into shards, or put on one device."""
    if len(placement.devices) == 1:
        return jax.device_put((state, problem), placement.devices[0])
    mesh, n = placement.mesh, len(placement.devices)
    if placement.data_parallel:
        problem = shard_voxels(problem, n)
    elif placement.members:
        state = pad_members(state, n)
        if not placement.shared_problem:
            problem = pad_members(problem, n)
    return (
        _put(state, _named(_state_axes(state, placement), mesh)),
        _put(problem, _named(_problem_axes(placement), mesh)),
    )


def _put(tree, shardings):
    """Host arrays -> global arrays; each process fills only its addressable shards, so
    the same call works on one host and across hosts."""
    leaves, treedef = jax.tree.flatten(jax.device_get(tree))
    shards = treedef.flatten_up_to(shardings)

    def put(a, sharding):
        a = np.asarray(a)
        return jax.make_array_from_callback(a.shape, sharding, lambda idx: a[idx])

    return treedef.unflatten([put(a, s) for a, s in zip(leaves, shards, strict=True)])


def gather(state, placement: Placement):
    """Device state -> NumPy on this host, padding members dropped."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        state = multihost_utils.process_allgather(state, tiled=True)
    state = jax.device_get(state)
    if placement.members and placement.padded_members != placement.members:
        state = jax.tree.map(lambda a: a[: placement.members], state)
    return state


def pad_members(tree, multiple: int):
    """Host pytree with a leading member axis, padded to a multiple of ``multiple`` by
    repeating the last member (extra members train too; their results are dropped)."""

    def pad(a):
        a = np.asarray(a)
        if a.ndim == 0:
            return a
        extra = -a.shape[0] % multiple
        return np.concatenate([a, np.repeat(a[-1:], extra, axis=0)]) if extra else a

    return jax.tree.map(pad, jax.device_get(tree))


def shard_voxels(problem: train.Problem, n: int) -> train.Problem:
    """Host Problem -> ``n`` shards stacked along the rows: the valid rows split into n
    near-equal parts (each padded to m = ceil(M / n) rows), ``count`` (n,) per shard."""
    x, u, pde = np.asarray(problem.x), np.asarray(problem.u), np.asarray(problem.pde)
    count = int(problem.count)
    m = math.ceil(count / n)
    parts = np.array_split(np.arange(count), n)

    def rows(a):
        out = np.zeros((n * m,) + a.shape[1:], a.dtype)
        for i, idx in enumerate(parts):
            out[i * m : i * m + len(idx)] = a[idx]
        return out

    counts = np.array([len(idx) for idx in parts], np.int32)
    return problem._replace(x=rows(x), u=rows(u), pde=rows(pde), count=counts)


def _shard_map(fn, mesh, in_specs, out_specs):
    """``jax.shard_map`` (JAX >= 0.6) or the experimental one, collectives written out."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    from jax.experimental.shard_map import shard_map

    return shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def initialize_distributed(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None
) -> bool:
    """Start JAX's multi-controller runtime (one process per host, or several on one
    host) before any other JAX call: ``jax.distributed.initialize``.

    The launch is given by the arguments (the CLI's ``--coordinator HOST:PORT
    --num-processes P --process-id I``; all three or none), else by
    ``JAX_COORDINATOR_ADDRESS`` (host:port of process 0), ``JAX_NUM_PROCESSES`` and
    ``JAX_PROCESS_ID``; in a Slurm job step (``srun``) or under Open MPI with more
    than one task and none of them set, JAX detects them itself (one GPU per task).
    Returns False (and does nothing) outside such a launch; True once initialised (a
    second call does nothing). On the CPU the collectives between processes are
    gloo's (this JAX's default).
    """
    if jax.distributed.is_initialized():
        return True
    env = os.environ
    given = (coordinator, num_processes, process_id)
    if all(v is None for v in given) and ("JAX_NUM_PROCESSES" in env or "JAX_PROCESS_ID" in env):
        names = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
        missing = [k for k in names if k not in env]
        if missing:
            raise ConfigError(f"multi-host launch: set {missing} too (see docs/scaling.md)")
        given = (env[names[0]], int(env[names[1]]), int(env[names[2]]))
    if any(v is not None for v in given):
        if any(v is None for v in given):
            raise ConfigError(
                "a launch over many processes needs coordinator, num_processes and "
                f"process_id; got {given}"
            )
        jax.distributed.initialize(
            coordinator_address=given[0], num_processes=given[1], process_id=given[2]
        )
        return True
    # an srun job step (not the batch script itself, whose SLURM_NTASKS counts the
    # allocation's tasks while it runs alone), or mpirun
    tasks = env.get("SLURM_STEP_NUM_TASKS") if "SLURM_JOB_ID" in env else None
    tasks = tasks or env.get("OMPI_COMM_WORLD_SIZE")
    if tasks is not None and tasks.isdigit() and int(tasks) > 1:
        jax.distributed.initialize()
        return True
    return False
