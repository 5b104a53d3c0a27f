"""Trained members as Results: one per dataset, or one volume of a slicewise fit.

An ensemble's map is the mean over its members in a good optimum (:func:`kept_members`);
the maps come back in the data's units (Pa for the modulus, u's unit for the fitted
field), with the run facts (:mod:`helmholtz_pinn.fit.run_facts`) and the checks of
:func:`helmholtz_pinn.report.result.make_result`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from helmholtz_pinn.assess import fit_checks
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import warn
from helmholtz_pinn.fit import chunks, host_loop
from helmholtz_pinn.fit.run_facts import SHORT_RUN, member_law_facts, run_facts
from helmholtz_pinn.fit.training import Trained
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.report.result import Result, make_result


def results(t: Trained) -> Result | list[Result]:
    """The Results of trained members: one per dataset (a list for a batch), or the volume
    of a slicewise fit, in the data's units. Each Result's ``config`` is the settings
    that ran (:meth:`~helmholtz_pinn.fit.plan.Plan.settings`)."""
    fitted, plan, datasets = t.fitted, t.plan, t.datasets
    state, history, preps, maps = fitted.state, fitted.history, fitted.preps, fitted.maps
    where = plan.placement
    facts = dict(devices=len(where.devices), parallel=where.mode, **fitted.facts)
    e, stacked, cfg = plan.ensemble, plan.stacked, plan.config
    settings = plan.settings(fitted.facts.get("lbfgs", {}).get("steps"))
    if t.slicewise:
        return _volume_result(t, settings, facts)
    members = [chunks.rows_of(state, i, e, stacked) for i in range(len(datasets))]
    wall, law = t.seconds, member_law_facts(t)
    out = []
    for i, ((mus, u_fit, _), prep, dataset) in enumerate(zip(maps, preps, datasets, strict=True)):
        rows = slice(i * e, (i + 1) * e) if e > 1 else i
        hist = [host_loop.member_record(r, rows) for r in history] if stacked else history
        run = run_facts(prep, plan, members[i], hist, wall, **facts, **t.checks[i])
        if stacked:
            run.update(batch_members=len(datasets), batch_index=i)
        run.update(law[i])
        kept = _members_of_map(run, cfg)
        if i == 0:
            _warn_short(run)
        dataset, u_mean = _in_data_units(dataset, u_fit[kept].mean(axis=0), t.scales[i])
        out.append(make_result(dataset, settings, mus[kept], u_mean, run, hist, members[i]))
    return out if stacked else out[0]


def _volume_result(t: Trained, settings, facts: dict) -> Result:
    """Slice maps put back on the volume's grid (NaN on slices not fitted); each slice's
    ensemble members in a poorer optimum are left out of its map (:func:`kept_members`;
    NaN members, which :func:`make_result` skips). The run facts hold ``facts`` and the
    law facts over all the slices (:func:`~helmholtz_pinn.fit.run_facts.member_law_facts`)."""
    volume, keep, cfg, fitted = t.data, t.keep, t.plan.config, t.fitted
    maps, state, history = fitted.maps, fitted.state, fitted.history
    facts = {**facts, **member_law_facts(t)[0], **t.checks[0]}
    run = run_facts(fitted.preps[0], t.plan, state, history, t.seconds, **facts, mode="slicewise")
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
    _warn_short(run)
    volume, u_fit = _in_data_units(volume, u_fit, t.scales[0])
    return make_result(volume, settings, mus, u_fit, run, history, state)


def _in_data_units(dataset: Dataset, u_fit: np.ndarray, scale: float) -> tuple:
    """(``dataset``, ``u_fit``) of data whose u was divided by ``scale``
    (:func:`~helmholtz_pinn.io.dataset.unit_amplitude`) in the data's unit again (the
    modulus does not depend on u's scale)."""
    if scale == 1.0:
        return dataset, u_fit
    return dataclasses.replace(dataset, u=dataset.u * scale), u_fit * scale


def kept_members(final_losses, keep: float) -> list[int]:
    """Indices of the ensemble members whose final loss is at most ``keep`` times the
    lowest (every member when none is finite): the members of the mean map."""
    losses = np.asarray(final_losses, float).reshape(-1)
    finite = np.isfinite(losses)
    if not finite.any():
        return list(range(losses.size))
    limit = keep * losses[finite].min()
    return [i for i in range(losses.size) if finite[i] and losses[i] <= limit]


def _members_of_map(run: dict, cfg: Config) -> list[int]:
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


def _warn_short(run: dict) -> None:
    """Warn (FitQualityWarning) for a short-run note of the run facts ``run`` (once per
    call of :func:`results`: the first member's)."""
    for note in run.get("notes", []):
        if note.startswith(SHORT_RUN):
            warn(note, fit_checks.FitQualityWarning)
