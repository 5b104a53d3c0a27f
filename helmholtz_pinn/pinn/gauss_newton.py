"""The Gauss-Newton phase: Levenberg-Marquardt iterations after the Adam blocks, on the
L-BFGS phase's fixed sample, a drop-in for that phase (:func:`gauss_newton_fn` has the
signature of :func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn`). ``invert`` does not run it: on
the CPU it reached a given loss and map later than L-BFGS (docs/performance.md).

The loss is a sum of squares, L(theta) = |rho(theta)|^2 with rho the weighted residual
vector of :func:`helmholtz_pinn.pinn.train.residual_vector` (data misfit and PDE
residual; L is the L-BFGS phase's loss). Each iteration linearises rho at theta (J v by
``jax.linearize``, J^T w by its transpose; J is never formed) and solves

    (J^T J + lambda I) delta = -J^T rho

by at most ``cg_steps`` conjugate-gradient iterations from delta = 0 (stopped early at
|residual| <= ``cg_tol`` |J^T rho|). The trial theta + delta is accepted only if L falls,
so the loss never rises; the gain ratio q = (L - L_trial) / (L - |rho + J delta|^2)
steers lambda (Nielsen's rule): accepted, lambda *= max(1/3, 1 - (2 q - 1)^3) and nu = 2;
rejected, lambda *= nu and nu *= 2. lambda starts at ``lambda_start`` times the mean
diagonal of J^T J (tr(J^T J) / n, estimated from one J z with random signs z).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from helmholtz_pinn.pinn import lbfgs, train

CG_STEPS = 50  # conjugate-gradient iterations per Gauss-Newton iteration, at most
CG_TOL = 1e-2  # the CG stops at |b - A delta| <= CG_TOL |b|
LAMBDA_START = 1e-3  # lambda_0 over the mean diagonal of J^T J


class Damping(NamedTuple):
    """The Levenberg-Marquardt state besides theta: lambda, its growth factor nu."""

    lam: jax.Array
    nu: jax.Array


def cg(matvec: Callable, b: jax.Array, steps: int, tol: float):
    """(x, r, k): k <= ``steps`` conjugate-gradient iterations on A x = b from x = 0 (A
    symmetric positive definite, given by ``matvec``), stopped when |r| <= tol |b|;
    r = b - A x."""
    stop = (tol * jnp.linalg.norm(b)) ** 2

    def go(c):
        k, _, r, _, rr = c
        return (k < steps) & (rr > stop)

    def body(c):
        k, x, r, p, rr = c
        ap = matvec(p)
        alpha = rr / jnp.vdot(p, ap)
        x, r = x + alpha * p, r - alpha * ap
        rr_new = jnp.vdot(r, r)
        return k + 1, x, r, r + (rr_new / rr) * p, rr_new

    start = (jnp.int32(0), jnp.zeros_like(b), b, b, jnp.vdot(b, b))
    k, x, r, _, _ = jax.lax.while_loop(go, body, start)
    return x, r, k


def lm_step(
    residual: Callable,
    theta: jax.Array,
    loss: jax.Array,
    damping: Damping,
    cg_steps: int = CG_STEPS,
    cg_tol: float = CG_TOL,
) -> tuple[jax.Array, jax.Array, Damping, jax.Array]:
    """One Levenberg-Marquardt iteration on L = |residual(theta)|^2 (theta flat, ``loss``
    its L): (theta, L, damping, CG iterations run) after it; theta and L unchanged where
    the step is rejected (a non-finite trial is rejected)."""
    rho, jvp = jax.linearize(residual, theta)
    transpose = jax.linear_transpose(jvp, theta)

    def vjp(w):
        return transpose(w)[0]

    g = vjp(rho)  # J^T rho = grad L / 2
    lam = damping.lam

    def matvec(v):
        return vjp(jvp(v)) + lam * v

    delta, r, k = cg(matvec, -g, cg_steps, cg_tol)
    # |rho|^2 - |rho + J delta|^2 = -2 delta.g - delta.J^T J delta, with
    # J^T J delta = -g - r - lam delta from the CG's residual r = -g - A delta
    predicted = -jnp.vdot(delta, g) + jnp.vdot(delta, r) + lam * jnp.vdot(delta, delta)
    trial = theta + delta
    new = jnp.sum(residual(trial) ** 2)
    ok = jnp.isfinite(new) & (new < loss)
    q = (loss - new) / jnp.maximum(predicted, jnp.finfo(loss.dtype).tiny)
    grown = Damping(lam * damping.nu, 2.0 * damping.nu)
    shrunk = Damping(lam * jnp.maximum(1 / 3, 1 - (2 * q - 1) ** 3), jnp.full_like(lam, 2.0))
    damping = jax.tree.map(lambda a, b: jnp.where(ok, a, b), shrunk, grown)
    return jnp.where(ok, trial, theta), jnp.where(ok, new, loss), damping, k


def start_damping(residual: Callable, theta: jax.Array, key: jax.Array, factor: float) -> Damping:
    """lambda_0 = ``factor`` tr(J^T J) / n, the trace from |J z|^2 for one vector z of
    random signs (Hutchinson's estimate), and nu = 2."""
    z = jax.random.rademacher(key, theta.shape, theta.dtype)
    jz = jax.jvp(residual, (theta,), (z,))[1]
    return Damping(factor * jnp.sum(jz**2) / theta.size, jnp.asarray(2.0, theta.dtype))


def gauss_newton_fn(
    spec: train.Spec,
    n_iter: int,
    points: int,
    *,
    members: bool = False,
    shared_problem: bool = False,
    cg_steps: int = CG_STEPS,
    cg_tol: float = CG_TOL,
    lambda_start: float = LAMBDA_START,
) -> Callable:
    """``(state, problem) -> (state, losses (n_iter + 1,), kept)``: a Gauss-Newton phase
    after Adam, in place of :func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn` and with its
    signature: the same loss on the same fixed sample
    (:func:`helmholtz_pinn.pinn.lbfgs.phase_batch`), ``n_iter`` Levenberg-Marquardt
    iterations (:func:`lm_step`) in one ``lax.scan``; ``losses`` the loss before each
    iteration and after the last (never rising). The params are replaced only if the
    last loss is finite and below the first (``kept``); the step counter and Adam's
    state stay as Adam left them. ``members``: as in
    :func:`helmholtz_pinn.pinn.train.block_fn`.
    """

    def phase(state: train.TrainState, problem: train.Problem):
        batch = lbfgs.phase_batch(state, problem, points)
        weight = train.pde_weight(state.step, spec)
        theta0, unravel = ravel_pytree(state.params)

        def residual(theta):
            return train.residual_vector(unravel(theta), state.consts, spec, problem, batch, weight)

        key = jax.random.fold_in(state.key, lbfgs.LBFGS_DRAW - 1)
        damping = start_damping(residual, theta0, key, lambda_start)

        def body(carry, _):
            theta, loss, damping = carry
            theta, new, damping, _ = lm_step(residual, theta, loss, damping, cg_steps, cg_tol)
            return (theta, new, damping), loss

        first = jnp.sum(residual(theta0) ** 2)
        (theta, last, _), losses = jax.lax.scan(body, (theta0, first, damping), None, n_iter)
        kept = jnp.isfinite(last) & (last < first)
        params = jax.tree.map(
            lambda new, old: jnp.where(kept, new, old), unravel(theta), state.params
        )
        return state._replace(params=params), jnp.append(losses, last), kept

    if not members:
        return phase
    return jax.vmap(phase, in_axes=(0, None if shared_problem else 0))
