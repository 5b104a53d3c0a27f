"""Training: one state pytree, a pure step, ``lax.scan`` blocks and the host loop.

Loss per step on a batch of B voxels drawn inside the mask from fold_in(key, step):
    L = mean |u'_net - u'_obs|^2 + w(step) mean |r|^2,  w(step) = w_pde min(1, step / warmup)
with r the nondimensional residual of :mod:`helmholtz_pinn.physics`. A block of
``sync_interval`` full steps runs on the device; the host reads the block's losses once
and drives the reduce-on-plateau rate and the divergence roll-back between blocks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from helmholtz_pinn import physics
from helmholtz_pinn.config import Config
from helmholtz_pinn.model import FourierMLP, split_jet

LOSS_NAMES = ("loss", "data", "pde")
EXPLODE_FACTOR = 1e4  # a block whose mean loss exceeds this times the best so far diverged


class DivergenceError(RuntimeError):
    """Training diverged and the roll-backs did not recover it."""


class Problem(NamedTuple):
    """Device-side data, nondimensional: voxel coordinates x (M, d) in the mask,
    observed u (M, F, C) complex, kappa (F,), omega_ratio (F,)."""

    x: jax.Array
    u: jax.Array
    kappa: jax.Array
    omega_ratio: jax.Array


class TrainState(NamedTuple):
    """Everything that changes during training, as one pytree."""

    params: Any
    consts: Any
    opt_state: Any
    step: jax.Array
    key: jax.Array


@dataclasses.dataclass(frozen=True)
class Spec:
    """Static (hashable) description of the networks and the loss; keys the compile cache."""

    ndim: int
    n_freq: int
    n_comp: int
    sigma_u: float
    sigma_mu: float
    cfg: Config

    @property
    def u_net(self) -> FourierMLP:
        c = self.cfg
        return FourierMLP(self.ndim, 2 * self.n_freq * self.n_comp, c.width, c.depth,
                          c.n_features, self.sigma_u, c.activation)

    @property
    def mu_net(self) -> FourierMLP:
        c = self.cfg
        return FourierMLP(self.ndim, physics.mu_channels(self.n_freq, c.mu_model), c.mu_width,
                          c.mu_depth, c.n_features, self.sigma_mu, c.activation)


def make_optimizer(cfg: Config) -> optax.GradientTransformation:
    """Adam whose rate lives in the optimizer state, so the host can change it."""
    return optax.inject_hyperparams(optax.adam)(learning_rate=cfg.learning_rate)


def init_state(spec: Spec, seed: int) -> TrainState:
    """Initialise both networks (fixed Fourier matrices in ``consts``) and Adam."""
    key_u, key_mu, key_data = jax.random.split(jax.random.key(seed), 3)
    x = jnp.zeros((1, spec.ndim), jnp.float32)
    vu = spec.u_net.init(key_u, x)
    vmu = spec.mu_net.init(key_mu, x)
    params = {"u": vu["params"], "mu": vmu["params"]}
    consts = {"u": vu["constants"], "mu": vmu["constants"]}
    opt_state = make_optimizer(spec.cfg).init(params)
    return TrainState(params, consts, opt_state, jnp.zeros((), jnp.int32), key_data)


def evaluate_fields(params, consts, spec: Spec, x: jax.Array, omega_ratio: jax.Array):
    """u' (N, F, C), its Laplacian, and the residual r (N, F, C) at points x (N, d)."""
    hetero = spec.cfg.pde == "hetero"
    su = spec.u_net.apply({"params": params["u"], "constants": consts["u"]}, x, order=2)
    ju = split_jet(su, spec.ndim, 2)
    order_mu = 1 if hetero else 0
    smu = spec.mu_net.apply({"params": params["mu"], "constants": consts["mu"]}, x,
                            order=order_mu)
    jm = split_jet(smu, spec.ndim, order_mu)
    mu, grad_mu = physics.mu_complex(jm.value, jm.grad, omega_ratio, spec.cfg.mu_model)
    to_c = functools.partial(physics.u_complex, n_freq=spec.n_freq, n_comp=spec.n_comp)
    return to_c(ju.value), to_c(ju.lap), to_c(ju.grad) if hetero else None, mu, grad_mu


def loss_terms(params, consts, spec: Spec, problem: Problem, x, u_obs):
    """(data loss, PDE loss) on a batch: mean |u' - u'_obs|^2 and mean |r|^2."""
    u, lap_u, grad_u, mu, grad_mu = evaluate_fields(params, consts, spec, x, problem.omega_ratio)
    if spec.cfg.pde == "hetero":
        r = physics.hetero_residual(u, grad_u, lap_u, mu, grad_mu, problem.kappa)
    else:
        r = physics.helmholtz_residual(u, lap_u, mu, problem.kappa)
    return jnp.mean(jnp.abs(u - u_obs) ** 2), jnp.mean(jnp.abs(r) ** 2)


def pde_weight(step: jax.Array, cfg: Config) -> jax.Array:
    """w(step) = pde_weight * min(1, step / pde_warmup)."""
    if cfg.pde_warmup == 0:
        return jnp.asarray(cfg.pde_weight, jnp.float32)
    return cfg.pde_weight * jnp.minimum(1.0, step.astype(jnp.float32) / cfg.pde_warmup)


def sample_batch(problem: Problem, key: jax.Array, step: jax.Array, size: int):
    """``size`` voxels drawn uniformly from fold_in(key, step); all voxels if size >= M."""
    if size >= problem.x.shape[0]:
        return problem.x, problem.u
    idx = jax.random.randint(jax.random.fold_in(key, step), (size,), 0, problem.x.shape[0])
    return problem.x[idx], problem.u[idx]


def train_step(state: TrainState, problem: Problem, spec: Spec) -> tuple[TrainState, jax.Array]:
    """One full step: sample, loss, gradient for both networks, Adam update."""
    cfg = spec.cfg
    x, u_obs = sample_batch(problem, state.key, state.step, cfg.batch_size)
    w = pde_weight(state.step, cfg)

    def loss_fn(params):
        data, pde = loss_terms(params, state.consts, spec, problem, x, u_obs)
        return data + w * pde, (data, pde)

    (loss, (data, pde)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    updates, opt_state = make_optimizer(cfg).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    new = TrainState(params, state.consts, opt_state, state.step + 1, state.key)
    return new, jnp.stack([loss, data, pde])


@functools.lru_cache(maxsize=32)
def make_block(spec: Spec, n_steps: int) -> Callable:
    """Jitted ``(state, problem) -> (state, losses (n_steps, 3))``: n_steps steps in one scan.

    Cached per (spec, n_steps), so repeated fits with the same shapes never recompile.
    """

    def block(state: TrainState, problem: Problem):
        return jax.lax.scan(lambda s, _: train_step(s, problem, spec), state, None, n_steps)

    return jax.jit(block)


def set_learning_rate(state: TrainState, lr: float) -> TrainState:
    """The same state with Adam's rate replaced (no recompile: same dtype and shape)."""
    hyper = dict(state.opt_state.hyperparams)
    hyper["learning_rate"] = jnp.asarray(lr, hyper["learning_rate"].dtype)
    return state._replace(opt_state=state.opt_state._replace(hyperparams=hyper))


@dataclasses.dataclass
class Plateau:
    """Reduce-on-plateau on the block-mean loss (host side, between blocks)."""

    lr: float
    best: float = math.inf
    wait: int = 0

    def update(self, loss: float, cfg: Config) -> float:
        if loss < self.best * 0.99:
            self.best, self.wait = loss, 0
        else:
            self.wait += 1
            if self.wait >= cfg.plateau_patience:
                self.lr, self.wait = max(self.lr * cfg.plateau_factor, cfg.min_lr), 0
        return self.lr


def fit(
    state: TrainState,
    problem: Problem,
    spec: Spec,
    *,
    callback: Callable[[dict], bool | None] | None = None,
    progress: bool = True,
) -> tuple[TrainState, list[dict]]:
    """Run ceil(steps / sync_interval) blocks; read the loss once per block.

    Between blocks: a non-finite or exploding loss rolls back to the last good state with
    the rate halved (at most ``max_retries`` times, else :class:`DivergenceError`); the
    plateau schedule updates the rate after the PDE warm-up; ``callback(record)`` may
    return True to stop early. Returns the final state and one record per block.
    """
    cfg = spec.cfg
    block = make_block(spec, cfg.sync_interval)
    n_blocks = math.ceil(cfg.steps / cfg.sync_interval)
    plateau, retries, history = Plateau(cfg.learning_rate), 0, []
    bar = _progress_bar(n_blocks * cfg.sync_interval, progress)
    t0 = time.perf_counter()
    good = state = set_learning_rate(state, cfg.learning_rate)
    while len(history) < n_blocks:
        new, losses = block(state, problem)
        losses = np.asarray(losses)  # the one host read per block
        mean = losses.mean(axis=0)
        if not np.all(np.isfinite(losses)) or mean[0] > EXPLODE_FACTOR * plateau.best:
            if retries >= cfg.max_retries:
                bar.close()
                raise DivergenceError(
                    f"loss diverged at step {int(good.step)} ({mean[0]:.3g}) after {retries} "
                    f"roll-backs; try a smaller --learning-rate than {plateau.lr:.2g}")
            retries += 1
            plateau.lr *= 0.5
            state = set_learning_rate(good, plateau.lr)
            continue
        good = state = new
        step = int(state.step)
        lr = plateau.lr
        if step > cfg.pde_warmup:
            lr = plateau.update(float(mean[0]), cfg)
            state = set_learning_rate(state, lr)
        record = {"step": step, "time_s": time.perf_counter() - t0, "lr": lr,
                  **{n: float(v) for n, v in zip(LOSS_NAMES, mean)},
                  **{f"last_{n}": float(v) for n, v in zip(LOSS_NAMES, losses[-1])},
                  "retries": retries}
        history.append(record)
        bar.update(cfg.sync_interval)
        bar.set_postfix(loss=f"{mean[0]:.3e}", pde=f"{mean[2]:.2e}", lr=f"{lr:.1e}")
        if callback is not None and callback(record):
            break
    bar.close()
    return state, history


def _progress_bar(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit="step", dynamic_ncols=True)


def predict(state: TrainState, spec: Spec, x: np.ndarray, omega_ratio: np.ndarray,
            chunk: int = 65536) -> tuple[np.ndarray, np.ndarray]:
    """u' (N, F, C) and mu' (N, F) at points x (N, d), evaluated in chunks of ``chunk``."""
    fn = _predict_fn(spec)
    parts = [fn(state.params, state.consts, jnp.asarray(x[i:i + chunk]),
                jnp.asarray(omega_ratio)) for i in range(0, len(x), chunk)]
    return (np.concatenate([np.asarray(p[0]) for p in parts]),
            np.concatenate([np.asarray(p[1]) for p in parts]))


@functools.lru_cache(maxsize=32)
def _predict_fn(spec: Spec):
    def fn(params, consts, x, omega_ratio):
        vu = {"params": params["u"], "constants": consts["u"]}
        vmu = {"params": params["mu"], "constants": consts["mu"]}
        u = physics.u_complex(spec.u_net.apply(vu, x)[0], spec.n_freq, spec.n_comp)
        mu, _ = physics.mu_complex(spec.mu_net.apply(vmu, x)[0], None, omega_ratio,
                                   spec.cfg.mu_model)
        return u, mu

    return jax.jit(fn)
