"""``mu_model="auto"``: which viscoelastic law a run keeps.

One law is fitted and every law is judged on its wave; the second law is fitted where
that judgement does not keep the first, and always for a form with a pressure (navier;
one frequency needs no law: per-frequency). The laws are judged by the spread of their
per-frequency factors (:func:`helmholtz_pinn.assess.laws.choice`), and the kept fit's
L-BFGS phase goes on to its plan's full length; the Result records the choice as its
``law`` fact.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections.abc import Sequence

import jax
import numpy as np

from helmholtz_pinn.assess import fit_checks, laws, metrics
from helmholtz_pinn.fit import chunks
from helmholtz_pinn.fit.admission import Admitted
from helmholtz_pinn.fit.plan import Plan
from helmholtz_pinn.fit.results import results
from helmholtz_pinn.fit.run_facts import member_law_facts
from helmholtz_pinn.fit.training import Trained, train
from helmholtz_pinn.pinn import forms, law_judge
from helmholtz_pinn.pinn.problem import prepare
from helmholtz_pinn.pinn.train import unstack_tree
from helmholtz_pinn.report.result import Result


def auto_law(given: Admitted, plans: Sequence[Plan], run: dict) -> Result | list[Result]:
    """``mu_model="auto"`` on the admitted input ``given``, one fit per plan of ``plans``
    (:func:`helmholtz_pinn.fit.plan.plans`; ``run``: the callback and the progress): one
    frequency is fitted per-frequency (no law to choose). Otherwise the laws are
    fitted one after the other in the plans' order (for one dataset
    :func:`helmholtz_pinn.assess.laws.prior`'s: the classical per-frequency estimate's
    favourite first), until one is kept:

    - one dataset (not a batch or the slices of a volume) of a form without a pressure
      (:func:`_wave_judges`; not navier): after the first law's fit,
      every law's modulus network is fitted on that fit's wave (an ensemble: on each
      seed's, the worst spread) (:mod:`helmholtz_pinn.pinn.law_judge`);
      where their spreads separate the laws (:func:`laws.choice`) and keep the law fitted,
      and that law's spread is within the ``law_consistency`` limit of its fit
      (:func:`_law_limit`), its fit is the result (one fit);
    - otherwise the next law is fitted too and the laws are judged by each fit's own
      ``law_spread`` (the worst over a batch), as :func:`laws.choice` says (with
      ``determined``; if not, ``map_difference``, how far the two laws' G' maps differ).
      A slice of 3-D motion never determines the law (:func:`_unfit`).

    Where the first law's wave does not judge the laws on one dataset (navier),
    the next law's programs compile on a GPU while the first law trains, from when its
    Adam block has compiled (:func:`helmholtz_pinn.fit.chunks.compile_ahead`: the same
    programs, so the same fit).
    The kept law's map is the one that law's fit gives alone (its fit is the one run).
    A checkpoint folder gets one subfolder per law (the plan's); the warnings of a fit
    not kept are dropped. Every Result's ``law`` fact records the choice, the spreads it
    was made on (``tried``), on which wave (``judged_on``) and the ``fits`` run; where the
    first fit's wave did not decide, its spreads as ``first_wave`` ({"law", "tried",
    "limit": the first law's law_consistency limit}); where both laws were fitted, each
    fit's last Adam losses as ``losses`` ({law: {"data", "pde"}}, :func:`_final_losses`)
    and, for one dataset, the other law's map (``Result.others``) and accuracy
    (``law.other``, :func:`_with_other`).

    The fits' L-BFGS phases, where the phase applies, have
    :data:`helmholtz_pinn.fit.plan.AUTO_LBFGS_STEPS` iterations (the length at which the
    choice was measured); the kept fit's phase then continues to the plan's
    ``lbfgs_continued_to`` (:data:`helmholtz_pinn.fit.plan.LBFGS_STEPS`,
    :func:`_continued`), so the map is a named law's. An ``lbfgs_steps`` given in the
    request is every fit's phase, not continued."""
    if len(plans) == 1:
        record = {"mu_model": laws.ONE_FREQUENCY, "chosen_by": "one frequency: no law to choose"}
        return _with_law(results(train(given, plans[0], **run)), record)
    trained, caught = {}, {}
    t0 = time.perf_counter()
    first = plans[0].mu_model
    if not plans[0].stacked and not _wave_judges(plans[0]) and jax.default_backend() != "cpu":
        for plan in plans[1:]:  # fitted for certain: compiled once the first has its block
            chunks.compile_ahead(given.datasets, plan, after=chunks.after_next_block())
    trained[first] = _fit(given, plans[0], run, caught, len(plans))
    judged = _judged(trained[first])
    unfit = _unfit(given)
    decision = None if judged is None else laws.choice(judged, unfit)
    limit = None if judged is None else _law_limit(trained[first])  # the wave's own law
    one = decision is not None and decision.determined and decision.kept == first
    one = one and judged[first] <= limit
    if one:
        tried, on = judged, f"the {first} fit's wave"
    else:
        for plan in plans[1:]:
            if run["progress"]:
                print(f"law: fitting {plan.mu_model} to compare with {first}", file=sys.stderr)
            trained[plan.mu_model] = _fit(given, plan, run, caught, len(plans))
        tried = {law: _law_spread(t) for law, t in trained.items()}
        decision, on = laws.choice(tried, unfit), "each law's own fit"
    law = decision.kept
    for w in caught[law]:  # the kept fit's warnings, as they came
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    means = {name: _mean_map(t) for name, t in trained.items()}  # before the kept fit goes on
    difference = _map_difference(means, trained[law])
    kept = trained[law]
    if kept.plan.lbfgs_continued_to > kept.plan.lbfgs_steps:  # not an lbfgs_steps given
        kept = _continued(kept, run)
    kept.fitted.facts["laws_tried"] = list(tried)  # fit_quality's advice names the others
    seconds = time.perf_counter() - t0
    record = {
        "mu_model": law,
        "chosen_by": decision.rule,
        "determined": decision.determined,
        "tried": tried,
        "judged_on": on,
        "fits": len(trained),
        "wall_time_s": round(seconds, 2),
        "line": laws.describe(
            law, tried, seconds, difference, fits=len(trained), on=on, unfit=unfit
        ),
    }
    if difference is not None:
        record["map_difference"] = round(difference, 4)
    if len(trained) > 1:
        record["losses"] = {law: _final_losses(t) for law, t in trained.items()}
    if judged is not None and not one:  # what the first fit's wave said, for the record
        record["first_wave"] = {"law": first, "tried": judged, "limit": round(limit, 4)}
    out = _with_law(results(kept), record)
    for name, mu in means.items():  # one dataset: the other law's map beside the kept one
        if name != law and mu is not None:
            _with_other(out, name, mu)
    return out


# What law.other records of the other law's map (keys of assess.metrics.evaluate).
OTHER_MAP_FACTS = (
    "median_rel_error_storage",
    "median_rel_error_loss",
    "pearson_r_storage",
    "contrast_transfer",
)


def _with_other(result: Result, law: str, mu: np.ndarray) -> None:
    """Add to ``result`` the map ``mu`` of the law ``law`` fitted beside it and not kept
    (``Result.others``, Pa: :func:`_mean_map`, as judged: an L-BFGS phase is not continued
    for it) and, where the dataset has a ground truth, that map's accuracy over the same
    voxels as ``law.other`` (``mu_model`` and the G' and G'' errors, R and the targets'
    contrast of :func:`helmholtz_pinn.assess.metrics.evaluate`); an undetermined law's
    line says where that map is."""
    result.others = {**(result.others or {}), law: mu}
    facts = {"mu_model": law}
    if result.dataset is not None:
        margin = result.metrics.get("metric_margin", 0)
        known = metrics.evaluate(mu, result.dataset, margin=margin)
        facts.update({k: known[k] for k in OTHER_MAP_FACTS if k in known})
    record = result.metrics["law"]
    record["other"] = facts
    if not record["determined"]:
        record["line"] += f"; {law}'s map beside it as mu_{law}"


def _unfit(given: Admitted) -> str | None:
    """Why the fitted equation does not describe these data, so that no spread decides the
    law, or None: a 2-D fit of three components whose through-plane component carries
    more than the ``slice_motion`` check's share of the power (a slice of 3-D motion; on
    the sweep its spreads named the tissue's law on 2 of 6 held-out slices and read a
    wrong one as determined in a repeat, docs/accuracy.md)."""
    if given.stacked:
        return None
    share = fit_checks.through_plane_share(given.datasets[0])
    if not fit_checks.slice_of_3d_motion(share):
        return None
    limit = fit_checks.QUALITY_LIMITS["through_plane"]
    return f"a slice of 3-D motion: {share:.1%} of the power through-plane, above {limit:.1%}"


def _fit(given: Admitted, plan: Plan, run: dict, caught: dict, n_laws: int) -> Trained:
    """One law's fit by ``plan``, its warnings held in ``caught[law]`` (given out only
    if it is kept)."""
    law = plan.mu_model
    label = f"auto: {law}, law {len(caught) + 1} of {n_laws}" if run["progress"] else False
    with warnings.catch_warnings(record=True) as caught[law]:
        warnings.simplefilter("always")
        return train(given, plan, **dict(run, progress=label))


def _judged(t: Trained) -> dict[str, float] | None:
    """The spread of every law of :data:`laws.ORDER` with its modulus network fitted on
    the wave of the fit ``t`` of one dataset (:func:`helmholtz_pinn.pinn.law_judge.judge`;
    an ensemble: on each seed's wave, the worst); None for a batch or the slices of a
    volume (several datasets), and for a form with an auxiliary field (:func:`_wave_judges`)."""
    if not _wave_judges(t.plan):
        return None
    state = t.fitted.state
    seeds = unstack_tree(state, len(state.step)) if np.ndim(state.step) else [state]
    prep = prepare(t.datasets[0], **t.plan.problem_settings())
    judged = [law_judge.judge(s, prep.spec, prep.problem, laws.ORDER) for s in seeds]
    worst = {law: laws.worst([j[law].spread for j in judged]) for law in laws.ORDER}
    return {law: None if s is None else round(s, 4) for law, s in worst.items()}


def _wave_judges(plan: Plan) -> bool:
    """Whether :func:`_judged` judges the laws on the wave of a fit by ``plan``: one
    dataset, and a form without an auxiliary field. A free pressure (navier) takes up
    part of the fitted law's misfit wherever it sits: on the mu-network (a 2-D slice) the
    judgement never separated the laws, and on the u-network (a volume) the first law's
    wave kept the first law whatever the tissue's (docs/defaults.md, "Three components
    fit both laws")."""
    return not plan.stacked and not plan.spec.aux_channels


def _law_limit(t: Trained) -> float:
    """The ``law_consistency`` limit of the fit ``t`` (:func:`fit_checks.law_limit`): the
    first fit's wave keeps its own law only where that law's spread on it is within the
    limit its result would be checked against (a wave that the kept law does not describe
    has not decided the law: the next law is fitted too)."""
    last = t.fitted.history[-1] if t.fitted.history else {}
    spread_max = forms.get(t.plan.spec.pde).spread_max
    noise = t.fitted.preps[0].noise
    return fit_checks.law_limit(spread_max, noise, last.get("last_pde"), t.plan.small_fit)


def _mean_map(t: Trained) -> np.ndarray | None:
    """The map of the fit ``t`` of one dataset, complex Pa ``(F, *grid)``: the mean over
    its ensemble members; None for a batch or the slices of a volume (stacked)."""
    return None if t.plan.stacked else np.asarray(t.fitted.maps[0][0]).mean(axis=0)


def _map_difference(means: dict[str, np.ndarray | None], t: Trained) -> float | None:
    """The median relative difference over the mask of ``t``'s dataset of two laws' G'
    maps (:func:`helmholtz_pinn.assess.laws.map_difference`; ``means``: :func:`_mean_map`
    of each law's fit); None unless there are two maps."""
    maps = list(means.values())
    if len(maps) != 2 or any(m is None for m in maps):
        return None
    return laws.map_difference(*maps, t.datasets[0].mask)


def _final_losses(t: Trained) -> dict:
    """The data and PDE losses (nondimensional; per member for a batch or an ensemble) of
    the fit ``t``'s last Adam step, before any L-BFGS phase: where both laws are fitted,
    how well each law's fit met the data and the equation on the same schedule."""
    last = t.fitted.history[-1] if t.fitted.history else {}
    return {k: last.get(f"last_{k}") for k in ("data", "pde")}


def _law_spread(t: Trained) -> float | None:
    """The ``law_spread`` of trained members (:func:`member_law_facts`): the worst over a
    batch."""
    return laws.worst([f.get("law_spread") for f in member_law_facts(t)])


def _continued(t: Trained, run: dict) -> Trained:
    """``t`` with its L-BFGS phase continued from its plan's ``lbfgs_steps``
    (:data:`helmholtz_pinn.fit.plan.AUTO_LBFGS_STEPS`) to ``lbfgs_continued_to``
    (:data:`helmholtz_pinn.fit.plan.LBFGS_STEPS`) iterations in whole rounds of its compiled
    program (:func:`chunks.continue_lbfgs`), when the phase ran on one fit (not a batch or
    the slices of a volume) and lowered its loss; else ``t`` as it is."""
    if t.plan.stacked or t.fitted.lbfgs is None or not t.fitted.facts["lbfgs"]["kept"]:
        return t  # no phase, or one that did not lower the loss: more of it would not either
    t0, n = time.perf_counter(), t.plan.lbfgs_steps
    rounds = (t.plan.lbfgs_continued_to - n) // n
    if run["progress"]:
        print(
            f"law: {t.plan.mu_model} kept; its L-BFGS phase goes on for {rounds * n} iterations",
            file=sys.stderr,
        )
    fitted = chunks.continue_lbfgs(t.fitted, t.datasets[0], rounds)
    seconds = t.seconds + time.perf_counter() - t0
    return dataclasses.replace(t, fitted=fitted, seconds=seconds)


def _with_law(results: Result | list[Result], record: dict) -> Result | list[Result]:
    """``results`` with the auto law's ``record`` as the ``law`` fact of each."""
    for r in results if isinstance(results, list) else [results]:
        r.metrics["law"] = dict(record)
    return results
