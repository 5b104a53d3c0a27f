"""The Gauss-Newton phase: its residual vector is the loss's square root, one undamped
step solves a linear least-squares problem, and its iterations never raise the loss."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.pinn import gauss_newton as gn
from helmholtz_pinn.pinn import lbfgs, train


@pytest.fixture(scope="module")
def adam():
    """(prepared problem, state after 20 Adam steps) of a tiny plane-wave fit."""
    prep = prepare_one(plane_wave_dataset(), Config(**SMALL))
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)
    return prep, jax.jit(train.block_fn(prep.spec, 20))(state, prep.problem)[0]


def test_the_residual_vector_squared_is_the_loss_with_its_weights(adam):
    """|rho|^2 = data + w pde of weighted_loss, with unequal field weights, padding rows
    (point weight 0) and rows in the PDE margin (PDE weight 0)."""
    prep, state = adam
    p = prep.problem
    n = p.x.shape[0]
    problem = p._replace(
        count=jnp.asarray(n - 7, p.count.dtype),
        weight=p.weight * jnp.asarray([[1.0, 3.0], [0.5, 2.0]], p.weight.dtype),
        pde=jnp.asarray(p.pde).at[:40].set(0.0),
    )
    batch = train.sample_batch(problem, state.key, jnp.int32(0), 10**6)
    assert float(jnp.sum(batch[2])) == n - 7 and float(jnp.sum(batch[3])) == n - 47
    for w in (0.0, 0.1, 2.5):
        weight = jnp.float32(w)
        args = (state.params, state.consts, prep.spec, problem, batch, weight)
        loss, (data, pde) = train.weighted_loss(*args)
        rho = train.residual_vector(*args)
        f, c = prep.spec.n_freq, prep.spec.n_comp
        assert rho.shape == (4 * n * f * c,) and rho.dtype == jnp.float32
        np.testing.assert_allclose(float(jnp.sum(rho**2)), float(loss), rtol=1e-6)
        assert float(data) > 0 and float(pde) > 0


def test_one_undamped_step_reaches_the_linear_least_squares_minimiser():
    """For rho(theta) = A theta - b, J^T J delta = -J^T rho is the normal equation: one
    step with lambda = 0 (and enough CG iterations) lands on argmin |A theta - b|^2, and
    the gain ratio is 1 (the model is exact), so lambda shrinks by 3."""
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.normal(size=(12, 5)), jnp.float32)
    b = jnp.asarray(rng.normal(size=12), jnp.float32)
    best = np.linalg.lstsq(np.asarray(a, float), np.asarray(b, float), rcond=None)[0]

    def residual(theta):
        return a @ theta - b

    theta = jnp.zeros(5, jnp.float32)
    loss = jnp.sum(residual(theta) ** 2)
    damping = gn.Damping(jnp.float32(0.0), jnp.float32(2.0))
    step = jax.jit(lambda t, f, d: gn.lm_step(residual, t, f, d, cg_steps=5, cg_tol=0.0))
    after, new, damping, k = step(theta, loss, damping)
    np.testing.assert_allclose(np.asarray(after), best, rtol=1e-4, atol=1e-5)
    least = np.sum((np.asarray(a, float) @ best - b) ** 2)
    np.testing.assert_allclose(float(new), least, rtol=1e-5)
    assert int(k) <= 5 and float(damping.lam) == 0.0 and float(damping.nu) == 2.0
    damped = gn.Damping(jnp.float32(1.0), jnp.float32(2.0))
    assert float(step(theta, loss, damped)[2].lam) == pytest.approx(1 / 3, rel=1e-4)


def test_a_rejected_step_raises_lambda_and_keeps_theta():
    """A step that does not lower the loss is not taken and lambda grows by nu: Newton on
    arctan overshoots from theta = 3 (delta = -10 arctan 3 = -12.5, arctan(-9.5) is
    larger in magnitude than arctan 3); damped enough, the step is taken."""

    def residual(theta):
        return jnp.arctan(theta)

    theta = jnp.asarray([3.0], jnp.float32)
    loss = jnp.sum(residual(theta) ** 2)
    tiny = gn.Damping(jnp.float32(1e-9), jnp.float32(2.0))
    after, new, damping, _ = gn.lm_step(residual, theta, loss, tiny, cg_steps=1, cg_tol=0.0)
    assert float(new) == float(loss) and float(after[0]) == 3.0
    assert (float(damping.lam), float(damping.nu)) == pytest.approx((2e-9, 4.0))
    damped = gn.Damping(jnp.float32(0.1), jnp.float32(8.0))  # J^T J = 0.01
    after, new, damping, _ = gn.lm_step(residual, theta, loss, damped, cg_steps=1, cg_tol=0.0)
    assert float(new) < float(loss) and float(after[0]) < 3.0 and float(damping.nu) == 2.0


def test_the_phase_lowers_the_loss_at_every_iteration(adam):
    """On a tiny PINN the phase's losses never rise and fall well within 10 iterations;
    the loss it reports is that of the parameters it returns; Adam's state is kept."""
    prep, state = adam
    after, losses, kept = jax.jit(gn.gauss_newton_fn(prep.spec, 10, 10**6, cg_steps=20))(
        state, prep.problem
    )
    losses = np.asarray(losses)
    assert losses.shape == (11,) and bool(kept)
    assert np.all(np.diff(losses) <= 0) and losses[-1] < 0.1 * losses[0]
    batch = lbfgs.phase_batch(state, prep.problem, 10**6)
    weight = train.pde_weight(state.step, prep.spec)
    args = (after.params, state.consts, prep.spec, prep.problem, batch, weight)
    np.testing.assert_allclose(float(train.weighted_loss(*args)[0]), losses[-1], rtol=1e-4)
    assert int(after.step) == int(state.step)
    same = jax.tree.map(np.array_equal, after.opt_state, state.opt_state)
    assert all(jax.tree.leaves(same))
