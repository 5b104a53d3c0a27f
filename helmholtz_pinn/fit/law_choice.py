"""``mu_model="auto"``: which viscoelastic law a run keeps.

Both laws of :data:`helmholtz_pinn.assess.laws.ORDER` are fitted (one frequency needs no
law: per-frequency), judged by the spread of their per-frequency factors
(:func:`helmholtz_pinn.assess.laws.chosen`), and the kept fit's L-BFGS phase goes on to
its plan's full length; the Result records the choice as its ``law`` fact.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from pathlib import Path

from helmholtz_pinn.assess import laws
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import chunks
from helmholtz_pinn.fit.results import member_law_facts, results
from helmholtz_pinn.fit.training import Trained, train
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.report.result import Result


def auto_law(data, cfg: Config, run: dict, ckpt: dict, more: dict) -> Result | list[Result]:
    """``mu_model="auto"``: one frequency is fitted per-frequency (no law to choose);
    otherwise both laws of :data:`laws.ORDER` are fitted, judged by their ``law_spread``
    (the worst over a batch), and :func:`laws.chosen` is kept. A checkpoint folder gets
    one subfolder per law; the warnings of the fit not kept are dropped. Every Result's
    ``law`` fact records the choice and the spread of each law tried.

    The two fits' L-BFGS phases, where the phase applies, have
    :data:`helmholtz_pinn.fit.plan.AUTO_LBFGS_STEPS` iterations (the length at which the
    choice was measured); the kept fit's phase then continues to the plan's
    ``lbfgs_continued_to`` (:data:`helmholtz_pinn.fit.plan.LBFGS_STEPS`,
    :func:`_continued`), so the map is a named law's. An ``lbfgs_steps`` given in ``cfg`` is
    every fit's phase, not continued."""
    first = data if isinstance(data, Dataset) else next(iter(data), None)
    if isinstance(first, Dataset) and first.n_freq == 1:
        record = {"mu_model": "per-frequency", "chosen_by": "one frequency: no law to choose"}
        return _with_law(results(train(data, cfg, **run, **ckpt, **more)), record)
    tried = {}
    trained, caught = {}, {}
    t0 = time.perf_counter()
    for law in laws.ORDER:
        folder = ckpt["checkpoint_dir"]
        where = dict(ckpt, checkpoint_dir=None if folder is None else Path(folder) / law)
        if tried and run["progress"]:
            print(f"law: fitting {law} to compare with {', '.join(tried)}", file=sys.stderr)
        with warnings.catch_warnings(record=True) as caught[law]:
            warnings.simplefilter("always")
            trained[law] = train(data, cfg, law=law, **run, **where, **more)
        tried[law] = _law_spread(trained[law])
    law = laws.chosen(tried)
    for w in caught[law]:  # the kept fit's warnings, as they came
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    kept = trained[law] if cfg.lbfgs_steps is not None else _continued(trained[law], run)
    seconds = time.perf_counter() - t0
    record = {
        "mu_model": law,
        "chosen_by": "the lower spread of the per-frequency factors of each law's fit",
        "tried": tried,
        "wall_time_s": round(seconds, 2),
        "line": laws.describe(law, tried, seconds),
    }
    return _with_law(results(kept), record)


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
