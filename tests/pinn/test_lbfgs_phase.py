"""The L-BFGS phase after Adam: it lowers the loss of its fixed sample, keeps the Adam
state when it cannot, is the same program per member, and runs by the data's noise."""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.assess import laws
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.fit import chunks, inversion, law_choice, placement
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.forward.phantoms import add_noise
from helmholtz_pinn.pinn import forms, problem, train
from helmholtz_pinn.pinn.lbfgs import lbfgs_fn


def _adam_state(prep, steps=20):
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)
    block = jax.jit(train.block_fn(prep.spec, steps))
    return block(state, prep.problem)[0]


@pytest.fixture(scope="module")
def prepared():
    return prepare_one(plane_wave_dataset(), Config(**SMALL))


def test_lbfgs_lowers_the_loss_of_its_sample_and_leaves_adam_state(prepared):
    state = _adam_state(prepared)
    after, losses, kept = jax.jit(lbfgs_fn(prepared.spec, 30, 10**6))(state, prepared.problem)
    losses = np.asarray(losses)
    assert losses.shape == (31,) and bool(kept)
    assert losses[-1] < 0.5 * losses[0]  # 30 quasi-Newton iterations on 256 voxels
    # the zoom line search takes only steps of sufficient decrease: monotone up to rounding
    assert np.all(np.diff(losses) <= 1e-6 * losses[0]), np.diff(losses).max()
    # the loss it reports is the full-batch loss of the parameters after it
    batch = train.sample_batch(prepared.problem, state.key, jnp.int32(0), 10**6)
    data, pde = train.loss_terms(after.params, state.consts, prepared.spec, prepared.problem, batch)
    weight = train.pde_weight(state.step, prepared.spec)
    np.testing.assert_allclose(float(data + weight * pde), losses[-1], rtol=1e-4)
    assert int(after.step) == int(state.step)  # the step counter counts Adam steps
    same = jax.tree.map(np.array_equal, after.opt_state, state.opt_state)
    assert all(jax.tree.leaves(same))


def test_phase_compiled_ahead_in_a_thread_is_the_same_program(prepared):
    """The program compiled from abstract shapes in a background thread, while the caller
    goes on (as the Adam phase does), gives the jitted phase's result bit for bit."""
    plan = placement.plan(1, rows=prepared.problem.x.shape[0], per_voxel=84, batch_size=64)
    state, prob = placement.place(_adam_state(prepared), prepared.problem, plan)
    future = placement.lbfgs_ahead(prepared.spec, 5, 10**6, plan, state, prob)
    state = jax.jit(train.block_fn(prepared.spec, 3))(state, prob)[0]  # the caller trains on
    ahead = future.result()(state, prob)
    plain = jax.jit(lbfgs_fn(prepared.spec, 5, 10**6))(state, prob)
    for a, b in zip(jax.tree.leaves(ahead), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_lbfgs_that_cannot_lower_the_loss_keeps_the_adam_parameters(prepared):
    state = _adam_state(prepared)
    poisoned = state._replace(consts=jax.tree.map(lambda c: c * jnp.nan, state.consts))
    after, _, kept = jax.jit(lbfgs_fn(prepared.spec, 3, 10**6))(poisoned, prepared.problem)
    assert not bool(kept)
    same = jax.tree.map(np.array_equal, after.params, state.params)
    assert all(jax.tree.leaves(same))


def test_stacked_members_get_the_lbfgs_phase_as_each_alone(prepared):
    states = [_adam_state(prepared), _adam_state(prepared, steps=10)]
    one = jax.jit(lbfgs_fn(prepared.spec, 5, 10**6))
    both = jax.jit(lbfgs_fn(prepared.spec, 5, 10**6, members=True, shared_problem=True))
    stacked, losses, _ = both(train.stack_trees(states), prepared.problem)
    for i, s in enumerate(states):
        alone, loss_i, _ = one(s, prepared.problem)
        np.testing.assert_allclose(np.asarray(losses)[i], np.asarray(loss_i), rtol=2e-4)
        for a, b in zip(
            jax.tree.leaves(alone.params), jax.tree.leaves(stacked.params), strict=True
        ):
            np.testing.assert_allclose(np.asarray(b)[i], np.asarray(a), rtol=2e-3, atol=2e-5)


def _lbfgs(datasets, cfg, judged=False):
    """The plan's L-BFGS iterations for ``datasets`` and ``cfg``."""
    form = forms.get(forms.resolve(cfg.pde, datasets[0].n_comp))
    return run_plan.lbfgs_steps(datasets, cfg, form, judged=judged)


def test_the_phase_runs_on_one_clean_long_navier_fit_of_a_field_its_sample_holds():
    scalar, clean = plane_wave_dataset(), _two_components()
    assert _lbfgs([scalar], Config(steps=10000)) == 0  # not navier
    assert _lbfgs([clean], Config(steps=10000, pde="hetero")) == 0
    u = add_noise(clean.u.reshape(clean.n_freq, clean.n_comp, -1), -20.0, 0)
    noisy = dataclasses.replace(clean, u=u.reshape(clean.u.shape))
    assert problem.best_noise(clean) < run_plan.CLEAN_NOISE < problem.best_noise(noisy)
    long = Config(steps=10000)
    on = _lbfgs([clean], long)
    assert (on, run_plan.adam_steps(long, on)) == (run_plan.LBFGS_STEPS, long.lbfgs_from)
    assert _lbfgs([clean], long, judged=True) == run_plan.AUTO_LBFGS_STEPS  # a law choice's
    assert _lbfgs([clean, clean], long) == 0  # a batch: not measured
    assert _lbfgs([clean], long.replace(ensemble=2)) == 0
    assert _lbfgs([clean], Config(steps=5000)) == 0  # not longer
    voxels = int(np.count_nonzero(clean.mask))  # the sample must hold the whole field
    assert _lbfgs([clean], long.replace(lbfgs_points=voxels)) > 0
    assert _lbfgs([clean], long.replace(lbfgs_points=voxels - 1)) == 0
    given = Config(steps=300, lbfgs_steps=7)
    assert (_lbfgs([noisy], given), run_plan.adam_steps(given, 7)) == (7, 300)
    off = Config(steps=10000, lbfgs_steps=0)
    assert (_lbfgs([clean], off), run_plan.adam_steps(off, 0)) == (0, 10000)
    with pytest.raises(ConfigError, match="lbfgs_steps must be an integer >= 0 iterations"):
        Config(lbfgs_steps=-1)


def test_invert_records_the_phase_and_keeps_adam_steps():
    result = inversion.invert(
        plane_wave_dataset(), Config(**{**SMALL, "steps": 20, "lbfgs_steps": 10}), progress=False
    )
    facts = result.metrics["lbfgs"]
    assert facts["steps"] == 10 and facts["kept"] is True
    assert facts["loss_after"] < facts["loss_before"]
    assert result.metrics["steps"] == 20
    assert not any("L-BFGS" in n for n in result.metrics["notes"])


def _two_components():
    """The plane waves of :func:`plane_wave_dataset` as two components: a navier fit."""
    scalar = plane_wave_dataset()
    return dataclasses.replace(scalar, u=np.concatenate([scalar.u, scalar.u[:, :1]], axis=1))


def test_auto_judges_both_laws_on_the_short_phase_then_continues_the_kept_one(monkeypatch):
    """mu_model auto compares the laws after AUTO_LBFGS_STEPS iterations (each law's spread
    is that of a named fit given that phase); the kept fit's phase then goes on to
    LBFGS_STEPS iterations from where it stopped, so its loss only falls. The map is in
    the data's units, and the fit's time is its own, not both laws'."""
    monkeypatch.setattr(run_plan, "AUTO_LBFGS_STEPS", 4)
    monkeypatch.setattr(run_plan, "LBFGS_STEPS", 12)
    plain = _two_components()
    data = dataclasses.replace(plain, u=plain.u * 1e-6)  # metres: u / s inside, u * s out
    cfg = Config(**{**SMALL, "steps": 20, "lbfgs_from": 10})
    auto = inversion.invert(data, cfg, mu_model="auto", progress=False)
    law = auto.metrics["law"]
    assert set(law["tried"]) == {"springpot", "voigt"}
    short = inversion.invert(data, cfg, mu_model=law["mu_model"], lbfgs_steps=4, progress=False)
    assert law["tried"][law["mu_model"]] == short.metrics["law_spread"]
    facts, before = auto.metrics["lbfgs"], short.metrics["lbfgs"]
    assert (facts["steps"], facts["continued"], auto.config.lbfgs_steps) == (12, 8, 12)
    assert facts["loss_before"] == before["loss_before"]  # the same Adam phase
    assert facts["loss_after"] < before["loss_after"]  # the 8 iterations more lowered it
    assert auto.metrics["steps"] == 10
    assert not np.allclose(auto.mu, short.mu)  # the map is the continued fit's
    assert auto.metrics["wall_time_s"] < law["wall_time_s"]  # one law's fit
    assert 3e-7 < np.abs(auto.u_fit).max() < 3e-6  # the data's unit


def test_the_continuation_stops_at_a_round_that_does_not_lower_the_loss(prepared):
    """A phase that kept nothing is not continued; a continued round that keeps nothing
    ends the continuation (running it again would repeat it) and is counted once."""
    untouched = types.SimpleNamespace(
        plan=types.SimpleNamespace(stacked=False),
        fitted=types.SimpleNamespace(
            lbfgs=lambda *_: pytest.fail("a phase that kept nothing ran again"),
            facts={"lbfgs": {"kept": False}},
        ),
    )
    assert law_choice._continued(untouched, {"progress": False}) is untouched
    calls = []

    def refused(state, problem):  # a round that did not lower its loss
        calls.append(1)
        return state, jnp.array([2.0, 3.0]), jnp.array(False)

    state = jax.device_get(_adam_state(prepared))
    cfg, data = Config(**SMALL), plane_wave_dataset()
    form = forms.get(forms.resolve(cfg.pde, data.n_comp))
    plan = run_plan.plan([data], cfg, form=form, devices=1)
    facts = {"steps": 5, "loss_before": 2.0, "loss_after": 1.0, "kept": True, "time_s": 0.5}
    fitted = chunks.Fitted([], [], state, [], plan, {"lbfgs": facts}, refused)
    more = chunks.continue_lbfgs(fitted, plane_wave_dataset(), rounds=3)
    assert len(calls) == 1
    lbfgs = more.facts["lbfgs"]
    assert (lbfgs["steps"], lbfgs["continued"], lbfgs["loss_after"]) == (10, 5, 1.0)
    assert lbfgs["kept"] is True and len(more.maps) == 1


def test_auto_continues_the_kept_law_unless_the_phase_length_is_given(monkeypatch):
    """auto continues the fit of the law of the lower spread; an lbfgs_steps given is
    every fit's whole phase, not continued."""
    continued = []

    def trained(given, plan, **kw):  # a law's fit, as far as the choice reads it
        ns = types.SimpleNamespace
        goes_on = 4 if plan.config.lbfgs_steps is None else plan.lbfgs_continued_to
        phase = ns(stacked=True, lbfgs_steps=plan.lbfgs_steps, lbfgs_continued_to=goes_on)
        return ns(law=plan.mu_model, plan=phase, fitted=ns(facts={}, history=[]))

    monkeypatch.setattr(law_choice, "train", trained)
    spreads = {"springpot": 0.02, "voigt": 0.01}
    monkeypatch.setattr(law_choice, "_law_spread", lambda t: spreads[t.law])
    monkeypatch.setattr(law_choice, "_continued", lambda t, run: continued.append(t.law) or t)
    monkeypatch.setattr(law_choice, "results", lambda t: types.SimpleNamespace(metrics={}))
    data = plane_wave_dataset()
    kept = inversion.invert(data, mu_model="auto", progress=False)
    assert kept.metrics["law"]["mu_model"] == "voigt" and continued == ["voigt"]
    assert kept.metrics["law"]["determined"] is False  # 2x apart: within SEPARATION
    inversion.invert(data, mu_model="auto", lbfgs_steps=7, progress=False)
    assert continued == ["voigt"]


def test_named_laws_and_one_frequency_get_the_long_phase():
    """The plan gives a named law's fit, and auto's one-frequency fit (no law to choose),
    the long phase; auto's fits of both laws the short one, continued to the long one."""
    clean = _two_components()
    one = dataclasses.replace(clean, u=clean.u[:1], frequency=clean.frequency[:1], mu=clean.mu[:1])
    cfg = Config(steps=10000, mu_ref=3000.0)

    def planned(data, **settings):
        asked = cfg.replace(**settings)
        form = forms.get(forms.resolve(asked.pde, data.n_comp))
        return run_plan.plan([data], asked, form=form, devices=1)

    named, single = planned(clean, mu_model="voigt"), planned(one, mu_model="auto")
    assert single.laws == ("per-frequency",) and single.mu_model == "per-frequency"
    for p in (named, single):
        assert p.lbfgs_steps == p.lbfgs_continued_to == run_plan.LBFGS_STEPS
    judged = planned(clean, mu_model="auto")
    assert judged.laws == laws.ORDER and judged.mu_model == laws.ORDER[0]
    assert (judged.lbfgs_steps, judged.lbfgs_continued_to) == (
        run_plan.AUTO_LBFGS_STEPS,
        run_plan.LBFGS_STEPS,
    )
    given = planned(clean, mu_model="auto", lbfgs_steps=7)
    assert given.lbfgs_steps == given.lbfgs_continued_to == 7  # every fit's whole phase
    assert run_plan.AUTO_LBFGS_STEPS < run_plan.LBFGS_STEPS
    assert run_plan.LBFGS_STEPS % run_plan.AUTO_LBFGS_STEPS == 0  # whole rounds of the program
