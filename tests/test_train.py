"""Training invariants: scan block == single steps, no recompiles, determinism, roll-back."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL

from helmholtz_pinn import inversion, train
from helmholtz_pinn.config import Config
from helmholtz_pinn.data import Dataset


def plane_wave_dataset(n=16, h=1e-3, freqs=(60.0, 90.0), g=3000.0, eta=1.0):
    """Two plane waves per frequency in a homogeneous Voigt medium (exact solution)."""
    freqs = np.asarray(freqs)
    mu = g + 1j * 2 * np.pi * freqs * eta
    x = np.arange(n)[:, None] * h
    y = np.arange(n)[None, :] * h
    u = []
    for f, m in zip(freqs, mu, strict=True):
        k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / m)
        u.append([np.exp(1j * k * (0.8 * x + 0.6 * y)), np.exp(1j * k * (-0.6 * x + 0.8 * y))])
    return Dataset(
        u=np.array(u),
        frequency=freqs,
        spacing=np.array([h, h]),
        mask=np.ones((n, n), bool),
        mu=mu[:, None, None] * np.ones((1, n, n)),
    )


@pytest.fixture(scope="module")
def prepared():
    return inversion.prepare(plane_wave_dataset(), Config(**SMALL))


@pytest.mark.parametrize("pde", ["helmholtz", "hetero"])
def test_scan_block_equals_single_steps(pde):
    prep = inversion.prepare(plane_wave_dataset(), Config(**SMALL, pde=pde))
    state0 = train.init_state(prep.spec, 0)
    blocked, losses = train.make_block(prep.spec, 5)(state0, prep.problem)
    step = jax.jit(train.train_step, static_argnums=2)
    state, single = state0, []
    for _ in range(5):
        state, loss = step(state, prep.problem, prep.spec)
        single.append(loss)
    assert int(blocked.step) == int(state.step) == 5
    np.testing.assert_allclose(np.asarray(losses), np.stack(single), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(blocked.params), jax.tree.leaves(state.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the weights moved: the comparison is not between two untouched states
    moved = jax.tree.map(lambda a, b: jnp.max(jnp.abs(a - b)), blocked.params, state0.params)
    assert max(jax.tree.leaves(moved)) > 1e-4


def test_second_block_call_does_not_recompile(prepared):
    block = train.make_block(prepared.spec, 5)
    state = train.init_state(prepared.spec, 0)
    state, _ = block(state, prepared.problem)
    size = block._cache_size()
    state = train.set_learning_rate(state, 1e-4)
    state, _ = block(state, prepared.problem)
    assert block._cache_size() == size
    assert train.make_block(prepared.spec, 5) is block  # reused across fits


def test_state_dtypes_and_shapes_are_stable(prepared):
    state0 = train.init_state(prepared.spec, 0)
    state1, _ = train.make_block(prepared.spec, 5)(state0, prepared.problem)
    spec0 = jax.tree.map(lambda a: (a.shape, a.dtype), state0)
    spec1 = jax.tree.map(lambda a: (a.shape, a.dtype), state1)
    assert spec0 == spec1


def test_same_seed_same_modulus_different_seed_differs():
    ds = plane_wave_dataset()
    a = inversion.invert(ds, Config(**SMALL), progress=False)
    b = inversion.invert(ds, Config(**SMALL), progress=False)
    c = inversion.invert(ds, Config(**SMALL, seed=1), progress=False)
    np.testing.assert_array_equal(a.mu, b.mu)
    assert np.max(np.abs(a.mu - c.mu)) > 1e-3 * np.max(np.abs(a.mu))


def _poisoned(monkeypatch, bad_calls):
    """Make the first ``bad_calls`` block calls return NaN losses (a forced divergence)."""
    real = train.make_block
    calls = {"n": 0, "lr": []}

    def make_block(*args):
        block = real(*args)

        def poisoned(state, problem):
            calls["n"] += 1
            calls["lr"].append(float(state.opt_state.hyperparams["learning_rate"]))
            new, losses = block(state, problem)
            return new, losses * (jnp.nan if calls["n"] <= bad_calls else 1.0)

        return poisoned

    monkeypatch.setattr(train, "make_block", make_block)
    return calls


def test_divergence_rolls_back_and_lowers_the_rate(monkeypatch, prepared):
    calls = _poisoned(monkeypatch, bad_calls=1)
    cfg = prepared.spec.cfg
    state, history = train.fit(
        train.init_state(prepared.spec, 0), prepared.problem, prepared.spec, progress=False
    )
    assert int(state.step) == cfg.steps and len(history) == cfg.steps // cfg.sync_interval
    assert calls["lr"][:2] == pytest.approx([cfg.learning_rate, cfg.learning_rate / 2])
    assert history[-1]["retries"] == 1


def test_persistent_divergence_raises(monkeypatch, prepared):
    _poisoned(monkeypatch, bad_calls=100)
    with pytest.raises(train.DivergenceError, match="diverged at step 0"):
        train.fit(
            train.init_state(prepared.spec, 0), prepared.problem, prepared.spec, progress=False
        )


def test_callback_stops_early(prepared):
    seen = []

    def stop(record):
        seen.append(record["step"])
        return True

    state, history = train.fit(
        train.init_state(prepared.spec, 0),
        prepared.problem,
        prepared.spec,
        callback=stop,
        progress=False,
    )
    assert seen == [5] and len(history) == 1 and int(state.step) == 5


def test_pde_weight_warms_up_linearly():
    cfg = Config(pde_weight=2.0, pde_warmup=100)
    w = [float(train.pde_weight(jnp.asarray(s), cfg)) for s in (0, 50, 100, 500)]
    assert w == pytest.approx([0.0, 1.0, 2.0, 2.0])


def test_plateau_lowers_rate_after_patience():
    cfg = Config(plateau_patience=2, plateau_factor=0.5, min_lr=1e-4)
    p = train.Plateau(lr=1e-3)
    rates = [p.update(v, cfg) for v in (1.0, 0.5, 0.5, 0.5, 0.5, 0.5)]
    assert rates == pytest.approx([1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4])


def test_ensemble_members_identical_seeds_agree_and_distinct_seeds_spread(prepared):
    """vmapped members started from the same state stay identical (std 0); seeds differ."""
    s0 = train.init_state(prepared.spec, 0)
    same, _ = train.fit(
        train.stack_trees([s0, s0]),
        prepared.problem,
        prepared.spec,
        batched="shared",
        progress=False,
    )
    a, b = train.unstack_tree(same, 2)
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_array_equal(x, y)
    res = inversion.invert(plane_wave_dataset(), Config(**SMALL, ensemble=3), progress=False)
    assert res.mu_std.shape == res.mu.shape
    assert np.all(res.mu_std.real[0] > 0)
    assert res.metrics["ensemble"] == 3
