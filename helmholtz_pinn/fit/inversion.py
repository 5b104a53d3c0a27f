"""The library entry point: ``invert(data, config) -> Result``, for every kind of fit.

One dataset, an ensemble of seeds, a list of datasets of one grid, or the z-slices of a
volume (``slicewise=True``), on one device or many: each becomes M members (0 for one
plain fit) of one stacked state, a :class:`helmholtz_pinn.fit.placement.Placement` says where they
run, and the one host loop (:func:`helmholtz_pinn.fit.host_loop.run`) trains them, in chunks when
they do not fit at once (:mod:`helmholtz_pinn.fit.chunks`).

Units at the edges (Pa, m, Hz), nondimensional inside: coordinates by the field of view
L (m), u by its RMS per frequency and component, mu by ``mu_ref`` (Pa).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import numpy as np

from helmholtz_pinn.assess import fit_checks, input_checks, laws, metrics
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError, warn
from helmholtz_pinn.fit import checkpoints, chunks, host_loop, memory
from helmholtz_pinn.io.dataset import Dataset, unit_amplitude, z_slices
from helmholtz_pinn.pinn import dispersion, problem, train
from helmholtz_pinn.pinn.problem import Prepared, shared_settings
from helmholtz_pinn.report.records import RunFacts
from helmholtz_pinn.report.result import Result, make_result


def invert(
    data: Dataset | Sequence[Dataset],
    config: Config | None = None,
    *,
    slicewise: bool = False,
    devices: int | str | None = None,
    callback: Callable[[dict], bool | None] | None = None,
    progress: bool = True,
    checkpoint_dir: str | Path | None = None,
    resume: bool | str = False,
    force: bool = False,
    drop_empty_components: bool = False,
    **overrides,
) -> Result | list[Result]:
    """Fit the PINN and return the modulus in Pa.

    A list of datasets is fitted as one batched program: every member has its own
    scaling, loss, schedule, roll-back and early stop; mu_ref and the Fourier scales are
    shared (:func:`shared_settings`). A batch of more members than
    ``max_members_per_chunk`` (or than the memory holds) is fitted chunk by chunk
    (:mod:`helmholtz_pinn.fit.chunks`), each chunk checkpointed on its own. ``ensemble``
    E > 1 gives each dataset E seeds (``mu`` their mean, ``mu_std`` their spread, over
    the members whose final loss is within ``ensemble_keep`` times the lowest:
    :func:`kept_members`). Every dataset is first checked against MRE physics
    (:func:`helmholtz_pinn.assess.input_checks.check`: frequency in Hz, spacing in m, a
    resolved shear wave, no empty component). Ctrl-C (SIGINT) finishes the running
    block, writes a final checkpoint and raises
    :class:`~helmholtz_pinn.errors.Interrupted`.

    Args:
      data: one :class:`Dataset`, or a list of datasets of one grid, F and C.
      config: the settings; None: ``Config()``.
      slicewise: fit every z-slice of a 3-D dataset with its own 2-D PINN (one Result
        on the volume's grid; slices with an empty mask hold NaN). The default, one 3-D
        fit of a volume, uses the through-plane derivatives (docs/accuracy.md).
      devices: an int N or None/"all" (see :func:`helmholtz_pinn.fit.placement.plan`).
      callback: ``callback(record)`` once per block; return True to stop.
      progress: show a progress bar.
      checkpoint_dir: checkpoint the fit here every ``checkpoint_every`` blocks.
      resume: continue from the newest checkpoint in ``checkpoint_dir``
        (``resumed_from_step`` and a note in the run facts); with none there, note so
        and start at step 0, unless ``resume="strict"``, which raises
        :class:`~helmholtz_pinn.errors.CheckpointError` (as do other settings or other
        data than the checkpoint's).
      force: fit input that fails the physics checks anyway, recording the problems as
        notes.
      drop_empty_components: drop the components that are zero or negligible at every
        frequency (recorded as ``dropped_components`` in the run facts).
      **overrides: fields of ``config`` to replace, e.g. ``steps=2000``.

    Returns:
      One :class:`Result` for one dataset (or a slicewise volume), else a list of them
      in the order of ``data``.

    Raises:
      InputError: unusable input (:class:`~helmholtz_pinn.errors.ConfigError` for bad
        settings, :class:`~helmholtz_pinn.errors.DeviceMemoryError` when the problem
        does not fit).
      DivergenceError: the fit diverged and the roll-backs did not recover it.
    """
    cfg = (config or Config()).replace(**overrides)
    memory.check_results_fit(data, cfg, slicewise)  # the maps must fit the host: before any fit
    run = dict(slicewise=slicewise, devices=devices, callback=callback, progress=progress)
    ckpt = dict(checkpoint_dir=checkpoint_dir, resume=resume)
    more = dict(force=force, drop_empty_components=drop_empty_components)
    if cfg.mu_model == "auto":
        return _auto_law(data, cfg, run, ckpt, more)
    return _fit(data, cfg, **run, **ckpt, **more, phase=problem.LBFGS_STEPS)


def _fit(data, cfg: Config, **options) -> Result | list[Result]:
    """One law's fit: :func:`invert` once the law is known (``options``: :func:`_train`'s)."""
    return _results(_train(data, cfg, **options))


@dataclasses.dataclass
class _Trained:
    """One law's trained members before their Results (:func:`_train`, :func:`_results`):
    ``data`` the admitted input (u divided by ``scales``), ``datasets`` the members'
    (z-slices of a slicewise fit, ``keep`` their indices), ``checks`` the input facts
    per dataset, ``cfg`` the planned settings, ``shared`` the same with mu_ref and the
    Fourier scales filled in, ``fitted`` the trained members and their maps,
    ``slicewise`` and ``stacked`` how they were fitted (stacked: a member axis), and
    ``seconds`` the wall time of the fit so far (s)."""

    data: Dataset | list[Dataset]
    datasets: list[Dataset]
    keep: list[int] | None
    scales: list[float]
    checks: list[dict]
    cfg: Config
    shared: Config
    fitted: chunks.Fitted
    slicewise: bool
    stacked: bool
    seconds: float


def _train(
    data, cfg: Config, *, slicewise, devices, callback, progress, checkpoint_dir, resume, force,
    drop_empty_components, phase: int,
) -> _Trained:  # fmt: skip
    """Check, scale, plan and train one law's members. ``phase``: the L-BFGS
    iterations where ``cfg.lbfgs_steps`` is None and the phase applies
    (:func:`problem.lbfgs_plan`)."""
    resume = checkpoints.resume_mode(resume)
    t0 = time.perf_counter()
    one = isinstance(data, Dataset)
    if slicewise and not one:
        raise InputError("slicewise=True takes one 3-D Dataset, not a list")
    scaled = [unit_amplitude(d) for d in ([data] if one else _check_batch(data))]
    scales = [s for _, s in scaled]  # u / s: scale-free numerics; u_fit * s at the end
    admitted = [
        _admit(d, force, drop_empty_components, None if one else i)
        for i, (d, _) in enumerate(scaled)
    ]
    checks = [facts for _, facts in admitted]
    data = admitted[0][0] if one else _check_batch([d for d, _ in admitted])  # C after drops
    for d in [data] if one else data:  # a metric margin that leaves nothing: refused now
        metrics.interior_mask(d.mask, cfg.metric_margin, (0, 1) if slicewise else None)
    datasets, keep = z_slices(data) if slicewise else ([data] if one else data, None)
    stacked = len(datasets) > 1 or slicewise
    estimates = None if slicewise else [c["ahi_estimate_pa"] for c in checks]
    cfg = problem.lbfgs_plan(datasets, cfg, phase)  # the Adam steps and the L-BFGS phase
    cfg = problem.tf32_plan(cfg, jax.default_backend() == "gpu")
    shared = shared_settings(datasets, cfg, estimates)
    prints = None if checkpoint_dir is None else checkpoints.fingerprint([data] if one else data)
    run = dict(stacked=stacked, devices=devices, callback=callback, progress=progress)
    fitted = chunks.fit_members(datasets, cfg, shared, ckpt=(checkpoint_dir, prints, resume), **run)
    return _Trained(
        data, datasets, keep, scales, checks, cfg, shared, fitted, slicewise, stacked,
        time.perf_counter() - t0,
    )  # fmt: skip


def _results(t: _Trained) -> Result | list[Result]:
    """The Results of trained members: one per dataset (a list for a batch), or the volume
    of a slicewise fit, in the data's units."""
    fitted, cfg, datasets = t.fitted, t.cfg, t.datasets
    state, history, preps, maps = fitted.state, fitted.history, fitted.preps, fitted.maps
    facts = dict(devices=len(fitted.plan.devices), parallel=fitted.plan.mode, **fitted.facts)
    e, stacked = cfg.ensemble, t.stacked
    members = [chunks.rows_of(state, i, e, stacked) for i in range(len(datasets))]
    wall, law = t.seconds, _law_facts(t)
    if t.slicewise:
        facts.update(law[0])
        volume = _volume_result(
            t.data, t.keep, maps, cfg, preps[0], state, history, wall, facts, t.checks
        )
        return _warn_short(_in_data_units(volume, t.scales[0]))
    results = []
    for i, ((mus, u_fit, _), prep, dataset) in enumerate(zip(maps, preps, datasets, strict=True)):
        rows = slice(i * e, (i + 1) * e) if e > 1 else i
        hist = [host_loop.member_record(r, rows) for r in history] if stacked else history
        run = run_facts(prep, cfg, members[i], hist, wall, **facts, **t.checks[i])
        if stacked:
            run.update(batch_members=len(datasets), batch_index=i)
        run.update(law[i])
        kept = _kept_members(run, cfg)
        u_mean = u_fit[kept].mean(axis=0)
        result = make_result(dataset, cfg, mus[kept], u_mean, run, hist, members[i])
        results.append(_in_data_units(result, t.scales[i]))
    _warn_short(results[0])
    return results if stacked else results[0]


def law_facts(scale: np.ndarray, frequency: np.ndarray) -> dict:
    """``law_scale`` (per frequency: |c_f| and arg c_f in degrees) and ``law_spread`` of
    the per-frequency factors ``scale`` (members, F) complex of a Voigt or springpot fit
    (:mod:`helmholtz_pinn.pinn.dispersion`; the mean over ensemble seeds or slices);
    empty when they are NaN (no law fitted, or one frequency)."""
    scale = np.asarray(scale, complex).reshape(-1, len(frequency))
    scale = scale[np.isfinite(scale).all(axis=1)]
    if not scale.size:  # no law fitted (NaN), or one frequency (none computed)
        return {}
    mean = scale.mean(axis=0)
    return {
        "law_scale": [
            {
                "frequency_hz": float(f),
                "abs": round(float(abs(c)), 4),
                "phase_deg": round(float(np.degrees(np.angle(c))), 2),
            }
            for f, c in zip(frequency, mean, strict=True)
        ],
        "law_spread": round(dispersion.spread(mean), 4),
    }


def _auto_law(data, cfg: Config, run: dict, ckpt: dict, more: dict) -> Result | list[Result]:
    """``mu_model="auto"``: one frequency is fitted per-frequency (no law to choose);
    otherwise both laws of :data:`laws.ORDER` are fitted, judged by their ``law_spread``
    (the worst over a batch), and :func:`laws.chosen` is kept. A checkpoint folder gets
    one subfolder per law; the warnings of the fit not kept are dropped. Every Result's
    ``law`` fact records the choice and the spread of each law tried.

    The two fits' L-BFGS phases, where the phase applies, have
    :data:`problem.AUTO_LBFGS_STEPS` iterations (the length at which the choice was
    measured); the kept fit's phase then continues to :data:`problem.LBFGS_STEPS`
    (:func:`_continued`), so the map is a named law's. An ``lbfgs_steps`` given in ``cfg``
    is every fit's phase, not continued."""
    first = data if isinstance(data, Dataset) else next(iter(data), None)
    if isinstance(first, Dataset) and first.n_freq == 1:
        record = {"mu_model": laws.ONE_FREQUENCY, "chosen_by": "one frequency: no law to choose"}
        one = cfg.replace(mu_model=laws.ONE_FREQUENCY)
        return _with_law(_fit(data, one, **run, **ckpt, **more, phase=problem.LBFGS_STEPS), record)
    phase, tried = problem.AUTO_LBFGS_STEPS, {}
    trained, caught = {}, {}
    t0 = time.perf_counter()
    for law in laws.ORDER:
        folder = ckpt["checkpoint_dir"]
        where = dict(ckpt, checkpoint_dir=None if folder is None else Path(folder) / law)
        if tried and where["resume"] == "strict":  # the run continued began with the first law
            where["resume"] = True
        if tried and run["progress"]:
            print(f"law: fitting {law} to compare with {', '.join(tried)}", file=sys.stderr)
        n = len(tried) + 1  # each bar says which of the fits it is
        label = f"auto: {law}, law {n} of {len(laws.ORDER)}" if run["progress"] else False
        with warnings.catch_warnings(record=True) as caught[law]:
            warnings.simplefilter("always")
            law_cfg = cfg.replace(mu_model=law)
            law_run = dict(run, progress=label)
            trained[law] = _train(data, law_cfg, **law_run, **where, **more, phase=phase)
        tried[law] = _law_spread(trained[law])
    law = laws.chosen(tried)
    for w in caught[law]:  # the kept fit's warnings, as they came
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    kept = trained[law] if cfg.lbfgs_steps is not None else _continued(trained[law], run)
    kept.fitted.facts["laws_tried"] = list(tried)  # fit_quality's advice names the others
    seconds = time.perf_counter() - t0
    record = {
        "mu_model": law,
        "chosen_by": "the lower spread of the per-frequency factors of each law's fit",
        "tried": tried,
        "wall_time_s": round(seconds, 2),
        "line": laws.describe(law, tried, seconds),
    }
    return _with_law(_results(kept), record)


def _law_facts(t: _Trained) -> list[dict]:
    """:func:`law_facts` of trained members, one per Result: per dataset, or one over all
    the slices of a slicewise fit."""
    maps = t.fitted.maps
    if t.slicewise:
        return [law_facts(np.concatenate([s for *_, s in maps]), t.data.frequency)]
    return [law_facts(s, d.frequency) for (*_, s), d in zip(maps, t.datasets, strict=True)]


def _law_spread(t: _Trained) -> float | None:
    """The ``law_spread`` of trained members (:func:`_law_facts`): the worst over a batch."""
    return laws.worst([f.get("law_spread") for f in _law_facts(t)])


def _continued(t: _Trained, run: dict) -> _Trained:
    """``t`` with its L-BFGS phase continued from :data:`problem.AUTO_LBFGS_STEPS` to
    :data:`problem.LBFGS_STEPS` iterations in whole rounds of its compiled program
    (:func:`chunks.continue_phase`), when the phase ran on one fit (not a batch or the
    slices of a volume) and lowered its loss; else ``t`` as it is."""
    if t.stacked or t.fitted.phase is None or not t.fitted.facts["lbfgs"]["kept"]:
        return t  # no phase, or one that did not lower the loss: more of it would not either
    t0, n = time.perf_counter(), t.cfg.lbfgs_steps
    rounds = (problem.LBFGS_STEPS - n) // n
    if run["progress"]:
        print(
            f"law: {t.cfg.mu_model} kept; its L-BFGS phase goes on for {rounds * n} iterations",
            file=sys.stderr,
        )
    fitted = chunks.continue_phase(t.fitted, t.datasets[0], t.shared, rounds)
    steps, seconds = fitted.facts["lbfgs"]["steps"], t.seconds + time.perf_counter() - t0
    return dataclasses.replace(
        t, fitted=fitted, cfg=t.cfg.replace(lbfgs_steps=steps), seconds=seconds
    )


def _with_law(results: Result | list[Result], record: dict) -> Result | list[Result]:
    """``results`` with the auto law's ``record`` as the ``law`` fact of each."""
    for r in results if isinstance(results, list) else [results]:
        r.metrics["law"] = dict(record)
    return results


def _in_data_units(result: Result, scale: float) -> Result:
    """``result`` of data whose u was divided by ``scale`` (:func:`unit_amplitude`) with
    its fitted field and its dataset's u in the data's unit again (the modulus does not
    depend on u's scale)."""
    if scale != 1.0:
        result.u_fit = result.u_fit * scale
        result.dataset = dataclasses.replace(result.dataset, u=result.dataset.u * scale)
    return result


def kept_members(final_losses, keep: float) -> list[int]:
    """Indices of the ensemble members whose final loss is at most ``keep`` times the
    lowest (every member when none is finite): the members of the mean map."""
    losses = np.asarray(final_losses, float).reshape(-1)
    finite = np.isfinite(losses)
    if not finite.any():
        return list(range(losses.size))
    limit = keep * losses[finite].min()
    return [i for i in range(losses.size) if finite[i] and losses[i] <= limit]


def _kept_members(run: dict, cfg: Config) -> list[int]:
    """The members of one dataset's ensemble that its map averages (:func:`kept_members`
    on ``run['final_loss']``); the seeds left out are added to ``run`` (a note and
    ``ensemble_dropped_seeds``) and warned about."""
    if cfg.ensemble == 1:
        return [0]
    losses = np.asarray(run["final_loss"], float).reshape(-1)
    kept = kept_members(losses, cfg.ensemble_keep)
    dropped = [i for i in range(losses.size) if i not in kept]
    run["ensemble_dropped_seeds"] = [cfg.seed + i for i in dropped]
    if dropped:
        ratios = ", ".join(f"{losses[i] / np.nanmin(losses):.2g}x" for i in dropped)
        note = (
            f"ensemble: seeds {run['ensemble_dropped_seeds']} ended at {ratios} the lowest "
            f"final loss (ensemble_keep={cfg.ensemble_keep:g}): a poorer optimum, left out "
            f"of the mean map and its spread ({len(kept)} of {losses.size} members kept)"
        )
        _note_and_warn(run, note)
    return kept


def _note_and_warn(run: dict, note: str) -> None:
    """Add ``note`` to the run facts' notes and warn it (FitQualityWarning)."""
    run["notes"] = [*run.get("notes", []), note]
    warn(note, fit_checks.FitQualityWarning)


def _warn_short(result: Result) -> Result:
    """Warn (FitQualityWarning) once per call for a short-run note of ``result``."""
    for note in result.metrics.get("notes", []):
        if note.startswith(SHORT_RUN):
            warn(note, fit_checks.FitQualityWarning)
    return result


SHORT_RUN = "short run"


def _admit(dataset: Dataset, force: bool, drop: bool, index: int | None) -> tuple[Dataset, dict]:
    """The plausibility check at the door: (dataset, its run facts) with the empty
    components dropped when ``drop``; raises InputError unless ``force``, naming
    ``datasets[index]`` in a batch."""
    try:
        return _checked(dataset, force, drop)
    except InputError as err:
        if index is None:
            raise
        raise type(err)(f"datasets[{index}]: {err}") from None


def _checked(dataset: Dataset, force: bool, drop: bool) -> tuple[Dataset, dict]:
    facts = {}
    if drop:
        dataset, dropped = input_checks.drop_empty_components(dataset)
        facts["dropped_components"] = dropped
    facts["ahi_estimate_pa"] = input_checks.estimate(dataset)  # once: check, mu_ref, quality
    notes = input_checks.check(dataset, force=force, modulus=facts["ahi_estimate_pa"])
    if notes:
        facts["input_notes"] = notes
    return dataset, facts


def _check_batch(datasets) -> list[Dataset]:
    datasets = list(datasets)
    if not datasets:
        raise InputError("invert needs a Dataset or a non-empty list of Dataset; got an empty list")
    first = datasets[0]
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise InputError(f"datasets[{i}] must be a Dataset; got {type(d).__name__}")
        if (d.grid, d.n_freq, d.n_comp) != (first.grid, first.n_freq, first.n_comp):
            raise InputError(
                "a batch of datasets must share one grid, F and C (one compiled program); "
                f"datasets[0] has grid {first.grid}, F={first.n_freq}, C={first.n_comp} but "
                f"datasets[{i}] has grid {d.grid}, F={d.n_freq}, C={d.n_comp}; invert them "
                "in separate calls"
            )
    return datasets


def _volume_result(volume, keep, maps, cfg, prep, state, history, wall, facts, checks) -> Result:
    """Slice maps put back on the volume's grid (NaN on slices not fitted); each slice's
    ensemble members in a poorer optimum are left out of its map (:func:`kept_members`;
    NaN members, which :func:`make_result` skips). ``facts`` include the law facts over
    all the slices (:func:`_law_facts`)."""
    run = run_facts(prep, cfg, state, history, wall, **facts, **checks[0], mode="slicewise")
    skipped = [k for k in range(volume.grid[2]) if k not in keep]
    run.update(slices_fitted=keep, slices_skipped=skipped)
    e = cfg.ensemble
    losses = np.asarray(run["final_loss"], float).reshape(len(keep), e)
    mus = np.full((e, volume.n_freq, *volume.grid), np.nan + 0j)
    u_fit = np.full(volume.u.shape, np.nan + 0j)
    dropped = {}
    for (m, u, _), k, loss in zip(maps, keep, losses, strict=True):
        kept = kept_members(loss, cfg.ensemble_keep) if e > 1 else [0]
        mus[kept, ..., k], u_fit[..., k] = m[kept], u[kept].mean(axis=0)
        if len(kept) < e:
            dropped[str(k)] = [cfg.seed + i for i in range(e) if i not in kept]
    if e > 1:
        run["ensemble_dropped_seeds"] = dropped
    if dropped:
        note = (
            f"ensemble: on z-slices {sorted(map(int, dropped))} some seeds ended above "
            f"ensemble_keep={cfg.ensemble_keep:g} times the slice's lowest final loss (a "
            "poorer optimum) and are left out of that slice's map and spread "
            "(ensemble_dropped_seeds: slice -> seeds)"
        )
        _note_and_warn(run, note)
    return make_result(volume, cfg, mus, u_fit, run, history, state)


def run_facts(
    prep: Prepared, cfg: Config, state, history: list[dict], wall_s: float, **extra
) -> RunFacts:
    """The run facts of ``metrics.json``: steps, wall time (s), device, scales, the PDE
    margin (voxels) and the fraction of the mask's voxels with a PDE residual, final
    losses (nondimensional), retries; ``extra`` adds or overrides entries."""
    last = history[-1] if history else {}
    facts: RunFacts = {
        "steps": int(np.asarray(state.step).max()),
        "wall_time_s": wall_s,
        "device": str(jax.devices()[0]),
        "ensemble": cfg.ensemble,
        "pde": prep.spec.pde,
        "mu_ref_pa": prep.scales.mu_ref,
        "length_m": prep.scales.length,
        "sigma_u": prep.sigma_u,
        "sigma_mu": prep.sigma_mu,
        "sigma_factor_u": prep.sigma_factor_u,
        "batch_size": prep.spec.batch_size,
        "pde_margin": prep.pde_margin,
        "pde_fraction": prep.pde_fraction,
        **{f"final_{k}": last.get(f"last_{k}") for k in ("loss", "data", "pde")},
        "retries": last.get("retries", 0),
        "weighting": cfg.weighting,
        "noise_fraction": [
            [round(float(n), 4) if np.isfinite(n) else None for n in row] for row in prep.noise
        ],
        "field_weight": np.round(np.asarray(prep.problem.weight, float), 4).tolist(),
        "assumption": _assumption(prep.spec),
        **extra,
    }
    facts["notes"] = run_notes(cfg, facts)
    auto = cfg.sigma_factor_u is None and cfg.sigma_u is None
    if auto and prep.spec.ndim == 2 and prep.sigma_factor_u != problem.SIGMA_FACTOR_U_2D:
        facts["notes"].append(
            f"noisy 2-D data (the best field's noise fraction is at least {problem.NOISY_2D}): "
            f"the u-network's Fourier scale uses sigma_factor_u={prep.sigma_factor_u:g}, not "
            f"{problem.SIGMA_FACTOR_U_2D:g}, against a collapse of the modulus; a volume, where "
            "there is one, is the better input"
        )
    return facts


def run_notes(cfg: Config, facts: dict) -> list[str]:
    """What a user should know about how the run went: a resume (or a resume that found
    no checkpoint), the steps rounded up to whole blocks, an early stop, a fit that
    ended inside the PDE warm-up or before the learning-rate schedule could act, a PDE
    margin (how much of the mask it leaves without a residual), and the facts'
    assumption. The warm-up note also comes as a
    :class:`~helmholtz_pinn.assess.fit_checks.FitQualityWarning` (from :func:`invert`)."""
    planned = math.ceil(cfg.steps / cfg.sync_interval) * cfg.sync_interval
    ran, notes = facts["steps"], []
    notes += [
        f"{u}: deleted; resumed from an older one" for u in facts.get("unreadable_checkpoints", [])
    ]
    if facts.get("resumed_from_step") is not None:
        done, step = facts.get("chunks_already_done"), facts["resumed_from_step"]
        where = (
            f"of {planned}" if step < planned else f"(at or past steps={cfg.steps}: no training)"
        )
        notes.append(
            f"resumed from step {step} {where} ({facts['resumed_from']})"
            + (f"; {done} of {facts['chunks']} chunks were finished already" if done else "")
        )
    elif facts.get("no_checkpoint_in"):
        notes.append(f"no usable checkpoint in {facts['no_checkpoint_in']}: started at step 0")
    if facts.get("cleared_checkpoints"):
        notes.append(
            f"removed an earlier run's checkpoints from {facts['cleared_checkpoints']} once "
            "this run's first checkpoint was written: a fit without resume=True starts afresh"
        )
    if planned != cfg.steps:
        notes.append(
            f"steps={cfg.steps} rounded up to {planned}: a whole number of "
            f"sync_interval={cfg.sync_interval} blocks"
        )
    if ran < planned:
        notes.append(f"stopped early at step {ran} of {planned}: the loss stalled at min_lr")
    if ran < cfg.pde_warmup:
        notes.append(
            f"{SHORT_RUN}: the fit ended at step {ran}, before the PDE weight finished its "
            f"warm-up (pde_warmup={cfg.pde_warmup}); the modulus is barely constrained: "
            "use more steps (or a shorter pde_warmup)"
        )
    elif ran <= cfg.plateau_patience * cfg.sync_interval:
        notes.append(
            f"{SHORT_RUN}: {ran} steps are at most plateau_patience={cfg.plateau_patience} "
            "blocks: the learning-rate schedule never acted"
        )
    polish = facts.get("lbfgs") or {}
    if polish.get("skipped"):
        notes.append(f"no L-BFGS phase: it {polish['skipped']}")
    elif polish and not all(np.atleast_1d(polish["kept"])):
        notes.append(
            "the L-BFGS phase did not lower the loss: a fit whose lbfgs.kept is false keeps "
            "its Adam result"
        )
    if facts.get("pde_margin") and facts.get("pde_fraction", 0) < 1:
        notes.append(
            f"the PDE residual within {facts['pde_margin']} voxel(s) of the field of view's "
            f"in-plane edges was left out of the loss ({1 - facts['pde_fraction']:.0%} of the "
            "mask's voxels): the modulus there is the mu-network's continuation from inside "
            "(pde_margin; 0 fits the PDE everywhere)"
        )
    if facts.get("dropped_components"):
        notes.append(
            f"dropped the empty component(s) {facts['dropped_components']} (0-based) of u "
            "(drop_empty_components)"
        )
    notes += facts.get("input_notes", [])
    return notes + ([facts["assumption"]] if facts.get("assumption") else [])


def _assumption(spec: train.Spec) -> str | None:
    """What a fit of a 2-D slice of three-component motion assumes, or None."""
    if spec.ndim != 2 or spec.n_comp != 3:
        return None
    return (
        "2-D slice of 3-D motion: through-plane derivatives taken as zero (waves in the "
        "slice plane); fit the volume when the neighbouring slices exist"
    )
