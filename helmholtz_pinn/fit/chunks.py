"""Train the members of an inversion, chunk by chunk: stack, plan, place, checkpoint, fit.

Members: one dataset (no member axis), E seeds of one dataset (sharing its problem), or each
of S datasets (files, z-slices) times E seeds, stacked on a leading axis. A batch with more
members than fit at once (the plan's ``datasets_per_chunk``,
:func:`helmholtz_pinn.fit.plan.layout`) runs in chunks of whole datasets, one after the
other, each with its own checkpoint folder ``checkpoints/chunk-<i>`` (the chunk size in
``checkpoints/chunks.json``, reused on resume); a short last chunk is padded with copies of
its last dataset, so every chunk runs the one compiled program. A resume restores every
chunk; a finished one trains no further. Training memory is that of one chunk: each chunk's
problems are built when it starts, and only its maps and network parameters are kept once it
ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import jax
import numpy as np

from helmholtz_pinn.assess import laws
from helmholtz_pinn.errors import CheckpointError, Interrupted
from helmholtz_pinn.fit import checkpoints, host_loop, placement
from helmholtz_pinn.fit.plan import CHUNKS_FILE, Plan
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import dispersion, predict, train
from helmholtz_pinn.pinn.problem import Prepared, prepare


@dataclasses.dataclass
class Fitted:
    """What :func:`fit_members` returns, per dataset in order: ``maps`` (mu (E, F, *grid) in Pa,
    u_fit), ``preps`` (without their arrays), the member ``state`` (stacked; no Adam
    state when chunked), the block ``history`` (chunks merged), the run's ``plan``, the
    run ``facts`` (resume, chunks, the L-BFGS phase) and the last chunk's compiled
    ``lbfgs`` program (None without an L-BFGS phase)."""

    maps: list
    preps: list[Prepared]
    state: train.TrainState
    history: list[dict]
    plan: Plan
    facts: dict
    lbfgs: Any = None


def fit_members(datasets: list[Dataset], plan: Plan, *, callback, progress, ckpt) -> Fitted:
    """Fit ``datasets`` (the plan's members) in chunks of the plan's
    ``datasets_per_chunk``. ``ckpt``: (folder or None, data fingerprint of every member,
    resume mode)."""
    folder, prints, resume = ckpt
    folder = None if folder is None else Path(folder)
    size, stacked = plan.datasets_per_chunk, plan.stacked
    groups = [range(a, min(a + size, len(datasets))) for a in range(0, len(datasets), size)]
    chunked = len(groups) > 1
    if folder is not None and stacked:
        _save_chunk_size(folder, size)
    if chunked and resume == "strict" and not any(folder.glob("chunk-*/[0-9]*")):
        raise CheckpointError(
            f"no usable checkpoint in {folder}: resume='strict' does not start a fit afresh"
        )
    mode = True if chunked and resume else resume  # a chunk not reached yet has none
    e, maps, preps, states, histories = plan.ensemble, [], [], [], []
    facts, done, unreadable = {}, 0, []
    for c, idx in enumerate(groups):
        if progress and chunked:
            print(f"chunk {c + 1}/{len(groups)}: datasets {idx[0]}-{idx[-1]}", file=sys.stderr)
        sub = folder / f"chunk-{c:03d}" if chunked and folder is not None else folder
        pad = [idx[-1]] * (size - len(idx))  # a short last chunk reuses the compiled block
        part = [prepare(datasets[i], **plan.problem_settings(i)) for i in idx]
        part += part[-1:] * len(pad)  # the padding repeats the last dataset's problem
        real = slice(0, len(idx) * e)
        see = callback if not (pad and callback) else _members_only(callback, real)
        state, history, resumed, program = _fit_chunk(
            part, plan, see, progress, (sub, prints, mode)
        )
        for j, (i, p) in enumerate(zip(idx, part[: len(idx)], strict=True)):
            maps.append(_maps(rows_of(state, j, e, stacked), p, datasets[i]))
            preps.append(_light(p))
        if pad:
            state = jax.tree.map(lambda a, real=real: a[real], state)
            history = [host_loop.member_record(r, real) for r in history]
        states.append(state._replace(opt_state=None) if chunked else state)
        histories.append(history)
        unreadable += resumed.pop("unreadable_checkpoints", [])
        restored = resumed["resumed_from_step"] is not None
        done += restored and resumed.pop("trained_blocks") == 0
        if restored or not facts:
            facts = {k: v for k, v in resumed.items() if k != "trained_blocks"}
    if unreadable:
        facts["unreadable_checkpoints"] = unreadable
    if chunked:
        if "no_checkpoint_in" in facts:
            facts["no_checkpoint_in"] = str(folder)
        facts.update(chunks=len(groups), datasets_per_chunk=size, chunks_already_done=done)
    state = states[0] if not chunked else jax.tree.map(lambda *a: np.concatenate(a), *states)
    return Fitted(maps, preps, state, merge_histories(histories), plan, facts, program)


AHEAD_WAIT_S = 600.0  # the longest a compile-ahead waits for the fit it follows
_WAITING: list[threading.Event] = []  # compile-aheads waiting for the next fit's Adam block


def after_next_block() -> threading.Event:
    """An Event set once the next fit in this process has compiled its Adam block
    (:func:`_fit_chunk`), for :func:`compile_ahead`'s ``after``."""
    ready = threading.Event()
    _WAITING.append(ready)
    return ready


def _block_compiled() -> None:
    while _WAITING:
        _WAITING.pop().set()


def compile_ahead(
    datasets: list[Dataset], plan: Plan, after: threading.Event | None = None
) -> Future:
    """Compile (or load from the program store) the programs of ``plan``'s fit of
    ``datasets`` in a background thread, for its first chunk's shapes and placement: the
    initial state, the Adam block (both precisions where the plan switches), the L-BFGS
    phase and the map and dispersion programs. A fit by ``plan`` that starts later finds
    them ready (one compiled program each: the programs are cached per spec); the
    Future's result is None, its error the first program's that failed. ``after``
    (:func:`after_next_block`): start once it is set (at most :data:`AHEAD_WAIT_S`
    later), so that the fit running meanwhile compiles its own Adam block first and its
    GEMM autotuning has the GPU alone, as the L-BFGS phase's compile waits for it."""
    size, e = plan.datasets_per_chunk, plan.ensemble
    idx = range(min(size, len(datasets)))
    precision = jax.config.jax_default_matmul_precision  # a `with` setting is per thread

    def work():
        if after is not None:
            after.wait(AHEAD_WAIT_S)
        with jax.default_matmul_precision(precision):
            part = [prepare(datasets[i], **plan.problem_settings(i)) for i in idx]
            part += part[-1:] * (size - len(part))
            host, problem, _ = _stack_members(part, plan)
            where, block = plan.placement, _block(plan)
            state, problem = placement.place(host, problem, where)
            block.compiled(state, problem)
            if plan.switches_precision:  # the blocks after the switch
                with jax.default_matmul_precision(plan.float32_algorithm):
                    block.block.compiled(state, problem)
            if plan.runs_lbfgs:
                phase = placement.compile_lbfgs(
                    plan.spec, plan.lbfgs_steps, plan.config.lbfgs_points, where
                )
                phase.compiled(state, problem)
            _maps(rows_of(host, 0, e, plan.stacked), part[0], datasets[0])

    return placement.in_background(work, "helmholtz-pinn-compile-ahead")


def continue_lbfgs(fitted: Fitted, dataset: Dataset, rounds: int) -> Fitted:
    """One fit (not stacked) whose L-BFGS phase ran and kept its result, with that phase's
    compiled program run up to ``rounds`` more times from where it ended: each round
    restarts the L-BFGS memory on the same sample and keeps its parameters only if it
    lowered the loss (:func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn`); the first round that
    does not ends the continuation (a repeat would run the same iterations again).
    Returns ``fitted`` with the new state, its maps rebuilt from ``dataset`` (the one
    fitted, in the same units) with its plan, and the phase's facts for the whole phase:
    ``steps`` the iterations of every round run (kept or not), ``continued`` those after
    the first round, ``loss_after`` the loss of the parameters it ends with
    (nondimensional, on its sample; ``kept`` stays true), ``time_s`` every round's
    seconds."""
    prep = prepare(dataset, **fitted.plan.problem_settings())
    where = fitted.plan.placement
    state, problem = placement.place(fitted.state, prep.problem, where)
    facts = dict(fitted.facts["lbfgs"])
    t0, loss, ran = time.perf_counter(), facts["loss_after"], 0
    while ran < rounds:
        state, losses, kept = fitted.lbfgs(state, problem)
        ran += 1
        if not bool(kept):
            break
        loss = float(np.asarray(losses)[-1])
    state = placement.gather(state, where)
    facts.update(
        steps=facts["steps"] * (ran + 1),
        continued=facts["steps"] * ran,
        loss_after=round(loss, 8),
        time_s=round(facts["time_s"] + time.perf_counter() - t0, 2),
    )
    maps = [_maps(state, prep, dataset)]
    return dataclasses.replace(
        fitted, maps=maps, state=state, facts={**fitted.facts, "lbfgs": facts}
    )


def _save_chunk_size(folder: Path, size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CHUNKS_FILE).write_text(json.dumps({"datasets_per_chunk": size}))


def _fit_chunk(preps, plan: Plan, callback, progress, ckpt):
    """Members, placement (the plan's), checkpoints (``ckpt``: folder or None, data
    fingerprint, resume mode), the host loop, the L-BFGS phase; returns (host state,
    history, resume facts, the L-BFGS phase's compiled program or None). Every problem
    is padded to the plan's voxel rows (one compiled program for every chunk)."""
    spec, where, cfg = plan.spec, plan.placement, plan.config
    state, problem, members = _stack_members(preps, plan)
    block = _block(plan)
    state, problem = placement.place(state, problem, where)
    folder, data, resume = ckpt
    ckpt, state, host, resumed = checkpoints.start(folder, plan.settings(), data, resume, state)
    compiling = None  # the L-BFGS phase (or the float32 blocks) compile while Adam trains
    block.compiled(state, problem)  # first, so that its autotuning has the GPU alone
    _block_compiled()
    if plan.runs_lbfgs:
        compiling = placement.lbfgs_ahead(
            spec, plan.lbfgs_steps, cfg.lbfgs_points, where, state, problem
        )
    elif plan.switches_precision:
        block.float32_ahead(state, problem)
    before = 0 if host is None else len(host.history)
    if callback is not None and where.padded_members != members:  # it sees real members only
        callback = _members_only(callback, slice(0, members))
    with _final_checkpoint(ckpt):
        state, history = host_loop.run(
            state,
            problem,
            block,
            plan,
            members=where.padded_members,
            host=host,
            callback=callback,
            on_block=ckpt,
            progress=progress,
        )
    if where.padded_members != members:
        history = [host_loop.member_record(r, slice(0, members)) for r in history]
    resumed["trained_blocks"] = len(history) - before
    resumed["tf32_steps"] = plan.tf32_steps
    program = None
    if plan.lbfgs_steps:
        state, resumed["lbfgs"], program = _lbfgs(state, problem, compiling, plan, members)
    return placement.gather(state, where), history, resumed, program


def _block(plan: Plan):
    """The plan's compiled Adam block (:func:`placement.compile_block`), run by its
    precision schedule where it has TF32 steps or a float32 algorithm
    (:class:`placement.Scheduled`)."""
    block = placement.compile_block(plan.spec, plan.config.sync_interval, plan.placement)
    if not (plan.tf32_steps or plan.float32_algorithm):
        return block
    return placement.Scheduled(block, plan.tf32_steps, plan.float32_algorithm)


def _lbfgs(state, problem, compiling, plan: Plan, members: int) -> tuple[Any, dict, Any]:
    """The L-BFGS phase (:func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn`) on the placed state,
    ``compiling`` the future of its compiled program (:func:`placement.lbfgs_ahead`),
    None where the plan skips it (several devices): then the Adam state is returned as
    it is. Returns (state, facts, the compiled program or None); the facts: iterations,
    sample size, loss before and after (per member), whether each member kept its
    result, seconds waited for the compile after Adam ended, seconds run."""
    n = plan.lbfgs_steps
    facts: dict[str, Any] = {"steps": n, "points": plan.config.lbfgs_points}
    if compiling is None:
        return state, {**facts, "skipped": plan.lbfgs_skipped}, None
    t0 = time.perf_counter()
    program = compiling.result()
    t1 = time.perf_counter()
    state, losses, kept = program(state, problem)
    rows = max(members, 1)
    losses = np.asarray(losses, float).reshape(-1, n + 1)[:rows]
    kept = np.asarray(kept).reshape(-1)[:rows]

    def per_fit(a):  # one value for one fit, else one per member
        return a.tolist() if members else a[0].item()

    facts.update(
        loss_before=per_fit(losses[:, 0].round(8)),
        loss_after=per_fit(losses[:, -1].round(8)),
        kept=per_fit(kept),
        compile_wait_s=round(t1 - t0, 2),
        time_s=round(time.perf_counter() - t1, 2),
    )
    return state, facts, program


def _stack_members(preps, plan: Plan):
    """(state, problem, members): the E seeds of each dataset, stacked on a leading
    member axis with the problems padded to the plan's voxel rows (a stacked plan), or
    one problem shared by E seeds (members 0 for a single fit)."""
    p, cfg, e = preps[0], plan.config, plan.ensemble
    seeds = [
        jax.device_get(
            train.init_state(
                p.spec, cfg.seed + k, p.sigma_u, p.sigma_mu, cfg.learning_rate, plan.sigma_ratio_z
            )
        )
        for k in range(e)
    ]
    if plan.stacked:
        rows = plan.rows
        problem = train.stack_trees([_pad(q.problem, rows) for q in preps for _ in range(e)])
        return train.stack_trees(seeds * len(preps)), problem, len(preps) * e
    state, members = (train.stack_trees(seeds), e) if e > 1 else (seeds[0], 0)
    return state, p.problem, members


@contextlib.contextmanager
def _final_checkpoint(ckpt):
    """On :class:`Interrupted` (SIGINT, SIGTERM) write the last good state as a final
    checkpoint and raise again with where it is; close the checkpointer in any case."""
    try:
        yield
    except Interrupted as stop:
        where = "no checkpoint folder: nothing saved"
        if ckpt is not None:
            ckpt.save(stop.state, stop.host)
            where = f"checkpoint in {ckpt.directory}; continue with resume=True"
        raise Interrupted(f"{stop}; {where}", signal_name=stop.signal_name) from None
    finally:
        if ckpt is not None:
            ckpt.close()


def _members_only(callback, rows: slice):
    """``callback`` seeing the records of members ``rows`` only (not the padding)."""
    return lambda record: callback(host_loop.member_record(record, rows))


def merge_histories(histories: list[list[dict]]) -> list[dict]:
    """One history from the chunks' histories: per block, the members' lists joined in
    chunk order and the largest of each shared number (step, time_s); a chunk that
    stopped early repeats its last record."""
    if len(histories) == 1:
        return histories[0]
    merged = []
    for j in range(max(len(h) for h in histories)):
        records = [h[min(j, len(h) - 1)] for h in histories]

        def join(key, records=records):
            if isinstance(records[0][key], list):
                return [v for r in records for v in r[key]]
            return max(r[key] for r in records)

        merged.append({k: join(k) for k in records[0]})
    return merged


def _light(prep: Prepared) -> Prepared:
    """``prep`` without its per-voxel arrays (the run facts need only its scales)."""
    return dataclasses.replace(
        prep, problem=prep.problem._replace(x=None, u=None, pde=None), x_grid=None
    )


def _pad(problem: train.Problem, rows: int) -> train.Problem:
    """A host Problem with x, u and pde zero-padded to ``rows`` rows (``count`` unchanged)."""

    def pad(a):
        return np.concatenate([a, np.zeros((rows - len(a),) + a.shape[1:], a.dtype)])

    return problem._replace(x=pad(problem.x), u=pad(problem.u), pde=pad(problem.pde))


def rows_of(state, i: int, ensemble: int, stacked: bool):
    """Dataset i's member(s) of a host state: E stacked seeds, or one state."""
    if not stacked:
        return state
    rows = i if ensemble == 1 else slice(i * ensemble, (i + 1) * ensemble)
    return jax.tree.map(lambda a: a[rows], state)


def _maps(state, prep: Prepared, dataset: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mu (E, F, *grid) in Pa, u_fit (E, F, C, *grid) in data units, the law's
    per-frequency scale c_f (E, F) complex) on every voxel of the grid, from one state
    (E = 1) or E stacked ones; c_f (:mod:`helmholtz_pinn.pinn.dispersion`) is NaN
    unless a law of :data:`laws.LAWS` was fitted at two or more frequencies."""
    stacked = np.ndim(state.step) == 1
    members = train.unstack_tree(state, len(state.step)) if stacked else [state]
    fields = [predict.predict(m, prep.spec, prep.x_grid, prep.scales.omega_ratio) for m in members]
    mus = np.stack([to_grid(mu, dataset) * prep.scales.mu_ref for _, mu in fields])
    u_fit = np.stack([to_grid(u, dataset) for u, _ in fields])
    law = prep.spec.mu_model in laws.LAWS and prep.spec.n_freq > 1
    nan = np.full(prep.spec.n_freq, np.nan + 0j)
    scale = np.stack(
        [dispersion.frequency_scale(m, prep.spec, prep.problem) if law else nan for m in members]
    )
    return mus, u_fit * prep.u_scale.reshape(prep.u_scale.shape + (1,) * dataset.ndim), scale


def to_grid(values: np.ndarray, dataset: Dataset) -> np.ndarray:
    """Per-voxel values (prod(grid), *channels) -> (*channels, *grid)."""
    values = np.moveaxis(values, 0, -1)
    return values.reshape(values.shape[:-1] + dataset.grid)
