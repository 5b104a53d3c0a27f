"""The precision schedule: Adam's first ``tf32_steps`` in TF32 matmuls on a GPU, float32
("highest") after them, in the L-BFGS phase, the map and the checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.fit import inversion, placement
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.pinn import forms, model, train


def test_the_default_is_every_adam_step_before_a_phase_and_none_without_one():
    before_phase = Config(steps=5000, lbfgs_steps=4000)
    adam_only = Config(steps=10000, lbfgs_steps=0)
    given = adam_only.replace(tf32_steps=300)
    assert placement.tf32_steps(before_phase, 5000, 4000, True, True) == 5000
    assert placement.tf32_steps(adam_only, 10000, 0, True, True) == 0
    assert placement.tf32_steps(given, 10000, 0, True, True) == 300
    assert placement.tf32_steps(given, 10000, 0, True, False) == 0  # float32 on a CPU anyway
    phase = before_phase.replace(tf32_steps=300)  # asked, but the phase cannot run
    assert placement.tf32_steps(phase, 5000, 4000, False, True) == 0
    data, cfg = [plane_wave_dataset()], Config(**{**SMALL, "lbfgs_steps": 3, "steps": 12})
    form = forms.get(forms.resolve(cfg.pde, data[0].n_comp))
    with jax.default_matmul_precision(None):  # conftest sets "highest" for the whole suite
        on_gpu = run_plan.plan(data, cfg, form=form, devices=1, backend="gpu")
        assert on_gpu.tf32_steps == on_gpu.steps == 15  # whole blocks of 5
        assert run_plan.plan(data, cfg, form=form, devices=1, backend="cpu").tf32_steps == 0
    with jax.default_matmul_precision("float32"):  # the user's precision rules every program
        assert run_plan.plan(data, cfg, form=form, devices=1, backend="gpu").tf32_steps == 0
    with pytest.raises(ConfigError, match="tf32_steps must be an integer >= 0 steps"):
        Config(tf32_steps=-1)


def _tf32_on_a_cpu(monkeypatch):
    """The placement's TF32 rule as on a GPU without a user precision (on a CPU both
    programs compute float32)."""
    rule = placement.tf32_steps
    monkeypatch.setattr(
        placement,
        "tf32_steps",
        lambda cfg, steps, lbfgs, runs, _: rule(cfg, steps, lbfgs, runs, True),
    )


def test_blocks_before_the_switch_are_tf32_programs_and_after_it_float32():
    prep = prepare_one(plane_wave_dataset(), Config(**SMALL))
    block = placement.Scheduled(jax.jit(train.block_fn(prep.spec, 5)), tf32_steps=10)
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)

    def precisions(step):
        text = block.lower(state._replace(step=jnp.asarray(step, state.step.dtype)), prep.problem)
        return {p for p in ("HIGHEST", "HIGH,") if p in text.as_text()}

    with jax.default_matmul_precision(None):
        assert model.matmul_precision() == jax.lax.Precision.HIGHEST  # the library's default
    assert precisions(0) == precisions(9) == {"HIGH,"}  # HIGH: TF32 on a GPU
    assert precisions(10) == precisions(500) == {"HIGHEST"}


def test_wide_networks_run_their_float32_adam_blocks_as_three_bf16_products():
    """The rule (:func:`placement.float32_algorithm`): on a GPU without a user precision,
    networks at least 512 wide; the plan records it; a Scheduled block's programs after
    the switch (or all of them, without TF32 steps) carry the algorithm; the L-BFGS phase
    keeps float32 ("highest")."""
    split = placement.SPLIT_F32
    assert placement.float32_algorithm(512, True) == placement.float32_algorithm(1024, True)
    assert placement.float32_algorithm(512, True) == split == "BF16_BF16_F32_X3"
    assert placement.float32_algorithm(256, True) is None  # measured no faster there
    assert placement.float32_algorithm(512, False) is None  # a CPU, or the user's precision
    data = [plane_wave_dataset()]
    wide = Config(**{**SMALL, "width": 512, "lbfgs_steps": 3, "steps": 12})
    form = forms.get(forms.resolve(wide.pde, data[0].n_comp))

    def algorithm(cfg, backend):
        return run_plan.plan(data, cfg, form=form, devices=1, backend=backend).float32_algorithm

    with jax.default_matmul_precision(None):
        on_gpu = run_plan.plan(data, wide, form=form, devices=1, backend="gpu")
        assert on_gpu.float32_algorithm == on_gpu.record["float32_algorithm"] == split
        narrow = run_plan.plan(data, wide.replace(width=64), form=form, devices=1, backend="gpu")
        assert narrow.float32_algorithm is None and narrow.record["float32_algorithm"] == "highest"
        assert algorithm(wide, "cpu") is None
    with jax.default_matmul_precision("float32"):
        assert algorithm(wide, "gpu") is None

    prep = prepare_one(plane_wave_dataset(), Config(**SMALL))
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)
    jitted = jax.jit(train.block_fn(prep.spec, 5))

    def dots(block, step):
        at = state._replace(step=jnp.asarray(step, state.step.dtype))
        text = block.lower(at, prep.problem).as_text()
        lines = [x for x in text.splitlines() if "dot_general" in x]
        split_dots = sum("num_primitive_operations = 3" in x for x in lines)
        return split_dots, len(lines)

    with jax.default_matmul_precision(None):
        switching = placement.Scheduled(jitted, tf32_steps=10, float32=split)
        n_tf32, total = dots(switching, 0)
        assert n_tf32 == 0 < total  # TF32 before the switch
        assert dots(switching, 10) == (total, total)  # every matmul split after it
        assert dots(placement.Scheduled(jitted, 0, split), 0) == (total, total)
        assert dots(placement.Scheduled(jitted, 0), 0) == (0, total)  # "highest"


def test_a_schedule_runs_every_step_once_and_switches_at_its_step(monkeypatch):
    """On a CPU both programs compute float32, so a scheduled fit must equal an unscheduled
    one exactly: the switch neither skips nor repeats a step. The blocks' precisions are
    recorded as they run."""
    _tf32_on_a_cpu(monkeypatch)
    ran, ahead = [], []
    original, compile_ahead = placement.Scheduled.__call__, placement.Scheduled.float32_ahead

    def spy(self, state, problem):
        ran.append(int(np.asarray(state.step)) < self.tf32_steps)
        return original(self, state, problem)

    def spy_ahead(self, state, problem):  # started before the first block runs
        ahead.append(len(ran))
        return compile_ahead(self, state, problem)

    monkeypatch.setattr(placement.Scheduled, "__call__", spy)
    monkeypatch.setattr(placement.Scheduled, "float32_ahead", spy_ahead)
    cfg = Config(**{**SMALL, "steps": 10, "plateau_patience": 100})
    plain = inversion.invert(plane_wave_dataset(), cfg.replace(tf32_steps=0), progress=False)
    assert ran == []
    scheduled = inversion.invert(plane_wave_dataset(), cfg.replace(tf32_steps=5), progress=False)
    assert ran == [True, False]  # blocks of 5 steps
    assert ahead == [0]  # the float32 program compiled while the TF32 blocks train
    assert scheduled.metrics["steps"] == plain.metrics["steps"] == 10
    np.testing.assert_array_equal(scheduled.mu, plain.mu)
    assert [r["loss"] for r in scheduled.history] == [r["loss"] for r in plain.history]
    assert (scheduled.metrics["tf32_steps"], plain.metrics["tf32_steps"]) == (5, 0)


def test_a_fit_runs_its_float32_blocks_with_the_plans_algorithm(monkeypatch):
    """The plan's float32 algorithm reaches every float32 Adam block of a fit, with and
    without TF32 steps before them, and the run's record names it. A CPU computes float32
    at any algorithm, so the fit must equal the one without it exactly."""
    _tf32_on_a_cpu(monkeypatch)
    ran = []
    original = placement.Scheduled.__call__

    def spy(self, state, problem):
        tf32 = int(np.asarray(state.step)) < self.tf32_steps
        ran.append("tf32" if tf32 else self.float32)
        return original(self, state, problem)

    monkeypatch.setattr(placement.Scheduled, "__call__", spy)
    cfg = Config(**{**SMALL, "steps": 10, "plateau_patience": 100, "tf32_steps": 0})
    plain = inversion.invert(plane_wave_dataset(), cfg, progress=False)
    assert ran == [] and plain.metrics["plan"]["float32_algorithm"] == "highest"
    monkeypatch.setattr(placement, "float32_algorithm", lambda width, split: placement.SPLIT_F32)
    split = inversion.invert(plane_wave_dataset(), cfg, progress=False)
    assert ran == [placement.SPLIT_F32] * 2  # blocks of 5 steps
    assert split.metrics["plan"]["float32_algorithm"] == placement.SPLIT_F32
    np.testing.assert_array_equal(split.mu, plain.mu)
    ran.clear()
    inversion.invert(plane_wave_dataset(), cfg.replace(tf32_steps=5), progress=False)
    assert ran == ["tf32", placement.SPLIT_F32]


def test_no_tf32_steps_where_the_float32_phase_does_not_run(monkeypatch, four_devices):
    """The L-BFGS phase runs on one device only: on several, TF32 Adam steps would end
    the fit, so the schedule is off there."""
    _tf32_on_a_cpu(monkeypatch)
    ran = []
    monkeypatch.setattr(placement.Scheduled, "__call__", lambda self, *a: ran.append(1))
    cfg = Config(**{**SMALL, "tf32_steps": 5, "lbfgs_steps": 3})
    result = inversion.invert(plane_wave_dataset(), cfg, devices=4, progress=False)
    assert result.metrics["devices"] == 4 and "skipped" in result.metrics["lbfgs"]
    assert ran == [] and result.metrics["tf32_steps"] == 0
