"""The L-BFGS phase: quasi-Newton iterations after the Adam blocks, on one fixed sample.

The loss is the Adam step's (:func:`helmholtz_pinn.pinn.train.weighted_loss`) at the PDE
weight of the step Adam ended on; the phase is one ``lax.scan``, compiled once per spec,
iteration count and sample size (:func:`helmholtz_pinn.fit.placement.compile_lbfgs`).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from helmholtz_pinn.pinn import train

LBFGS_DRAW = 2**31 - 1  # the L-BFGS phase's sample: a fold_in that no Adam step uses


def phase_batch(state: train.TrainState, problem: train.Problem, points: int):
    """The phase's fixed sample of ``points`` voxels (every voxel of the mask when they
    are fewer), drawn as :func:`helmholtz_pinn.pinn.train.sample_batch` draws a step's
    batch, from the key fold_in(key, 2^31 - 1), which no Adam step uses."""
    key = jax.random.fold_in(state.key, LBFGS_DRAW)
    return train.sample_batch(problem, key, jnp.int32(0), points)


def lbfgs_fn(
    spec: train.Spec,
    n_iter: int,
    points: int,
    *,
    members: bool = False,
    shared_problem: bool = False,
) -> Callable:
    """``(state, problem) -> (state, losses (n_iter + 1,), kept)``: an L-BFGS phase after
    Adam; ``losses`` are the loss before each iteration and after the last.

    The loss L(params) = data + pde_weight(step) pde of
    :func:`helmholtz_pinn.pinn.train.loss_terms` on one fixed sample of ``points`` voxels
    (:func:`phase_batch`) is minimised by ``n_iter`` iterations
    of L-BFGS (optax, memory 10, zoom line search) in one ``lax.scan``. The state's params
    are replaced only if the last loss is finite and below the first (``kept``); the step
    counter and Adam's state stay as Adam left them. ``members``: as in
    :func:`helmholtz_pinn.pinn.train.block_fn`.
    """
    opt = optax.lbfgs(memory_size=10)

    def lbfgs(state: train.TrainState, problem: train.Problem):
        batch = phase_batch(state, problem, points)
        weight = train.pde_weight(state.step, spec)

        def loss(params):
            return train.weighted_loss(params, state.consts, spec, problem, batch, weight)[0]

        value_and_grad = optax.value_and_grad_from_state(loss)

        def body(carry, _):
            params, opt_state = carry
            value, grad = value_and_grad(params, state=opt_state)
            updates, opt_state = opt.update(
                grad, opt_state, params, value=value, grad=grad, value_fn=loss
            )
            return (optax.apply_updates(params, updates), opt_state), value

        start = (state.params, opt.init(state.params))
        (params, _), losses = jax.lax.scan(body, start, None, n_iter)
        last = loss(params)
        kept = jnp.isfinite(last) & (last < losses[0])
        params = jax.tree.map(lambda new, old: jnp.where(kept, new, old), params, state.params)
        return state._replace(params=params), jnp.append(losses, last), kept

    if not members:
        return lbfgs
    return jax.vmap(lbfgs, in_axes=(0, None if shared_problem else 0))
