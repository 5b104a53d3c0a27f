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
from helmholtz_pinn.model import FourierMLP, apply_pair, split_jet

LOSS_NAMES = ("loss", "data", "pde")
EXPLODE_FACTOR = 1e4  # a block whose mean loss exceeds this times the best so far diverged


class DivergenceError(RuntimeError):
    """Training diverged and the roll-backs did not recover it."""


class Problem(NamedTuple):
    """Device-side data, nondimensional: voxel coordinates x (M, d) in the mask,
    observed u (M, F, C) complex, kappa (F,), omega_ratio (F,), and ``count``, the
    number of valid rows (rows past it pad a problem to a batch's common M)."""

    x: jax.Array
    u: jax.Array
    kappa: jax.Array
    omega_ratio: jax.Array
    count: jax.Array


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
        return FourierMLP(
            self.ndim,
            2 * self.n_freq * self.n_comp,
            c.width,
            c.depth,
            c.n_features,
            self.sigma_u,
            c.activation,
        )

    @property
    def mu_net(self) -> FourierMLP:
        c = self.cfg
        return FourierMLP(
            self.ndim,
            physics.mu_channels(self.n_freq, c.mu_model),
            c.mu_width,
            c.mu_depth,
            c.n_features,
            self.sigma_mu,
            c.activation,
        )


def make_optimizer(cfg: Config) -> optax.GradientTransformation:
    """Adam whose rate lives in the optimizer state, so the host can change it."""
    return optax.inject_hyperparams(optax.adam)(learning_rate=cfg.learning_rate)


def init_state(spec: Spec, seed: int) -> TrainState:
    """Initialise both networks (fixed Fourier matrices in ``consts``) and Adam."""
    key_u, key_mu, key_data = jax.random.split(jax.random.PRNGKey(seed), 3)
    x = jnp.zeros((1, spec.ndim), jnp.float32)
    vu = spec.u_net.init(key_u, x)
    vmu = spec.mu_net.init(key_mu, x)
    params = {"u": vu["params"], "mu": vmu["params"]}
    consts = {"u": vu["constants"], "mu": vmu["constants"]}
    opt_state = make_optimizer(spec.cfg).init(params)
    return TrainState(params, consts, opt_state, jnp.zeros((), jnp.int32), key_data)


def init_members(spec: Spec, seed: int, ensemble: int) -> TrainState:
    """One state (``ensemble`` 1), or ``ensemble`` states of seeds seed, seed + 1, ...
    stacked on a leading member axis."""
    if ensemble == 1:
        return init_state(spec, seed)
    return stack_trees([init_state(spec, seed + e) for e in range(ensemble)])


def evaluate_fields(params, consts, spec: Spec, x: jax.Array, omega_ratio: jax.Array):
    """u' (N, F, C), Lap u', grad u' (hetero only), mu' (N, F) and grad mu' at points x (N, d).

    Both networks go through :func:`helmholtz_pinn.model.apply_pair`: stacked into one
    batched network for small batches (fewer device ops), separate for large ones.
    """
    hetero = spec.cfg.pde == "hetero"
    order_mu = 1 if hetero else 0
    su, smu = apply_pair(params, consts, x, spec.cfg.activation, (2, order_mu))
    ju = split_jet(su, spec.ndim, 2)
    jm = split_jet(smu, spec.ndim, order_mu)
    mu, grad_mu = physics.mu_complex(jm.value, jm.grad, omega_ratio, spec.cfg.mu_model)
    to_c = functools.partial(physics.u_complex, n_freq=spec.n_freq, n_comp=spec.n_comp)
    return to_c(ju.value), to_c(ju.lap), to_c(ju.grad) if hetero else None, mu, grad_mu


def loss_terms(params, consts, spec: Spec, problem: Problem, x, u_obs, weight):
    """(data loss, PDE loss) on a batch: weighted means of |u' - u'_obs|^2 and |r|^2.

    ``weight`` (N,) is 1 for used points and 0 for padding.
    """
    u, lap_u, grad_u, mu, grad_mu = evaluate_fields(params, consts, spec, x, problem.omega_ratio)
    if spec.cfg.pde == "hetero":
        r = physics.hetero_residual(u, grad_u, lap_u, mu, grad_mu, problem.kappa)
    else:
        r = physics.helmholtz_residual(u, lap_u, mu, problem.kappa)
    norm = jnp.sum(weight) * u.shape[1] * u.shape[2]
    data = jnp.sum(weight[:, None, None] * jnp.abs(u - u_obs) ** 2) / norm
    return data, jnp.sum(weight[:, None, None] * jnp.abs(r) ** 2) / norm


def pde_weight(step: jax.Array, cfg: Config) -> jax.Array:
    """w(step) = pde_weight * min(1, step / pde_warmup)."""
    if cfg.pde_warmup == 0:
        return jnp.asarray(cfg.pde_weight, jnp.float32)
    return cfg.pde_weight * jnp.minimum(1.0, step.astype(jnp.float32) / cfg.pde_warmup)


def sample_batch(problem: Problem, key: jax.Array, step: jax.Array, size: int):
    """(x, u_obs, weight): ``size`` valid voxels drawn uniformly from fold_in(key, step),
    or every row (padding weighted 0) when ``size`` >= M."""
    n = problem.x.shape[0]
    if size >= n:
        return problem.x, problem.u, (jnp.arange(n) < problem.count).astype(jnp.float32)
    idx = jax.random.randint(jax.random.fold_in(key, step), (size,), 0, problem.count)
    return problem.x[idx], problem.u[idx], jnp.ones((size,), jnp.float32)


def train_step(state: TrainState, problem: Problem, spec: Spec) -> tuple[TrainState, jax.Array]:
    """One full step: sample, loss, gradient for both networks, Adam update."""
    cfg = spec.cfg
    x, u_obs, weight = sample_batch(problem, state.key, state.step, cfg.batch_size)
    w = pde_weight(state.step, cfg)

    def loss_fn(params):
        data, pde = loss_terms(params, state.consts, spec, problem, x, u_obs, weight)
        return data + w * pde, (data, pde)

    (loss, (data, pde)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    updates, opt_state = make_optimizer(cfg).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    new = TrainState(params, state.consts, opt_state, state.step + 1, state.key)
    return new, jnp.stack([loss, data, pde])


def block_fn(spec: Spec, n_steps: int, batched: str | None = None) -> Callable:
    """``(state, problem) -> (state, losses (n_steps, 3))``: n_steps steps in one scan.

    ``batched``: None for one fit; "stacked" vmaps over states and problems with a
    leading member axis (independent slices); "shared" vmaps over states only (an
    ensemble of seeds on one problem).
    """

    def block(state: TrainState, problem: Problem):
        return jax.lax.scan(lambda s, _: train_step(s, problem, spec), state, None, n_steps)

    if batched is None:
        return block
    if batched not in ("stacked", "shared"):
        raise ValueError(f"batched must be None, 'stacked' or 'shared'; got {batched!r}")
    return jax.vmap(block, in_axes=(0, 0 if batched == "stacked" else None))


@functools.lru_cache(maxsize=32)
def make_block(spec: Spec, n_steps: int, batched: str | None = None) -> Callable:
    """The jitted :func:`block_fn`, cached per (spec, n_steps, batched): refits never
    recompile."""
    return jax.jit(block_fn(spec, n_steps, batched))


def set_learning_rate(state: TrainState, lr) -> TrainState:
    """The same state with Adam's rate replaced (no recompile: same dtype and shape).

    ``lr`` is a float, or one rate per member (S,) for a stacked state.
    """
    hyper = dict(state.opt_state.hyperparams)
    old = hyper["learning_rate"]
    hyper["learning_rate"] = jnp.broadcast_to(jnp.asarray(lr, old.dtype), old.shape)
    return state._replace(opt_state=state.opt_state._replace(hyperparams=hyper))


@dataclasses.dataclass
class Plateau:
    """Reduce-on-plateau on the block-mean loss (host side, between blocks).

    ``stopped`` becomes True when the loss stalls for ``plateau_patience`` blocks with the
    rate already at ``min_lr`` (early stop).
    """

    lr: float
    best: float = math.inf
    wait: int = 0
    stopped: bool = False

    def update(self, loss: float, cfg: Config) -> float:
        if loss < self.best * 0.99:
            self.best, self.wait = loss, 0
        else:
            self.wait += 1
            if self.wait >= cfg.plateau_patience:
                self.stopped = self.lr <= cfg.min_lr
                self.lr, self.wait = max(self.lr * cfg.plateau_factor, cfg.min_lr), 0
        return self.lr


@dataclasses.dataclass
class HostState:
    """What the host loop carries between blocks (saved with checkpoints)."""

    plateaus: list[Plateau]
    retries: list[int]
    history: list[dict]
    elapsed_s: float = 0.0

    @classmethod
    def new(cls, cfg: Config, members: int) -> HostState:
        return cls([Plateau(cfg.learning_rate) for _ in range(members)], [0] * members, [])

    def rates(self) -> np.ndarray:
        """Current rate per member; 0 for stopped members (Adam then leaves them fixed)."""
        return np.array([0.0 if p.stopped else p.lr for p in self.plateaus])

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> HostState:
        return cls(
            [Plateau(**p) for p in d["plateaus"]],
            list(d["retries"]),
            list(d["history"]),
            float(d.get("elapsed_s", 0.0)),
        )


def fit(
    state: TrainState,
    problem: Problem,
    spec: Spec,
    *,
    batched: str | None = None,
    host: HostState | None = None,
    callback: Callable[[dict], bool | None] | None = None,
    on_block: Callable[[TrainState, HostState], None] | None = None,
    progress: bool = True,
    block: Callable | None = None,
) -> tuple[TrainState, list[dict]]:
    """Run ceil(steps / sync_interval) blocks; read the losses once per block.

    Between blocks, per member: a non-finite or exploding loss rolls every member back to
    the last good state (the others recompute the same block bit for bit) with the
    diverged member's rate halved, at most ``max_retries`` times, else
    :class:`DivergenceError`; after the PDE warm-up the plateau schedule sets the rate
    and stops a member that no longer improves. ``callback(record)`` may return True to
    stop; ``on_block(state, host)`` sees each good block (checkpoints); ``host`` resumes a
    loop. With ``batched`` ("stacked"/"shared", see :func:`make_block`) the state has a
    leading member axis and records hold one value per member. ``block`` replaces
    ``make_block(spec, sync_interval, batched)`` with another compiled block of the same
    signature (sharded runs: :mod:`helmholtz_pinn.sharding`).
    """
    cfg = spec.cfg
    block = block or make_block(spec, cfg.sync_interval, batched)
    n_blocks = math.ceil(cfg.steps / cfg.sync_interval)
    members = 1 if batched is None else int(state.step.shape[0])
    host = host or HostState.new(cfg, members)
    bar = _progress_bar(n_blocks * cfg.sync_interval, progress)
    bar.update(len(host.history) * cfg.sync_interval)
    t0 = time.perf_counter() - host.elapsed_s
    good = state = _with_rates(state, host, batched)
    while len(host.history) < n_blocks and not all(p.stopped for p in host.plateaus):
        new, losses = block(state, problem)
        losses = np.asarray(losses).reshape(members, cfg.sync_interval, 3)  # one host read
        mean = losses.mean(axis=1)
        best = np.array([p.best for p in host.plateaus])
        bad = ~np.isfinite(losses).all(axis=(1, 2)) | (mean[:, 0] > EXPLODE_FACTOR * best)
        if bad.any():
            _roll_back(
                host,
                np.flatnonzero(bad),
                int(np.asarray(good.step).max()),
                mean,
                bar,
                cfg.max_retries,
            )
            state = _with_rates(good, host, batched)
            continue
        step = int(np.asarray(new.step).max())
        if step > cfg.pde_warmup:
            for p, loss in zip(host.plateaus, mean[:, 0], strict=True):
                if not p.stopped:
                    p.update(float(loss), cfg)
        good = state = _with_rates(new, host, batched)
        host.elapsed_s = time.perf_counter() - t0
        record = _record(step, host, mean, losses[:, -1], batched is not None)
        host.history.append(record)
        bar.update(cfg.sync_interval)
        bar.set_postfix(
            loss=f"{mean[:, 0].max():.3e}",
            pde=f"{mean[:, 2].max():.2e}",
            lr=f"{host.plateaus[0].lr:.1e}",
        )
        if on_block is not None:
            on_block(state, host)
        if callback is not None and callback(record):
            break
    bar.close()
    return state, host.history


def _with_rates(state: TrainState, host: HostState, batched: str | None) -> TrainState:
    rates = host.rates()
    return set_learning_rate(state, rates if batched is not None else rates[0])


def _roll_back(
    host: HostState, bad: np.ndarray, step: int, mean: np.ndarray, bar, max_retries: int
) -> None:
    """Halve the rate of diverged members, or raise once one has used its retries."""
    for i in bad:
        if host.retries[i] >= max_retries:
            bar.close()
            who = "" if len(host.plateaus) == 1 else f" (member {i})"
            raise DivergenceError(
                f"loss diverged at step {step}{who} ({mean[i, 0]:.3g}) after "
                f"{host.retries[i]} roll-backs; try a smaller --learning-rate than "
                f"{host.plateaus[i].lr:.2g}"
            )
        host.retries[i] += 1
        host.plateaus[i].lr *= 0.5


def _record(step: int, host: HostState, mean, last, batched: bool) -> dict:
    def value(column):
        return [float(v) for v in column] if batched else float(column[0])

    rates = host.rates()
    return {
        "step": step,
        "time_s": host.elapsed_s,
        "lr": [float(r) for r in rates] if batched else float(rates[0]),
        **{n: value(mean[:, k]) for k, n in enumerate(LOSS_NAMES)},
        **{f"last_{n}": value(last[:, k]) for k, n in enumerate(LOSS_NAMES)},
        "retries": host.retries if batched else host.retries[0],
    }


def member_record(record: dict, rows: int | slice) -> dict:
    """A batched history record restricted to member(s) ``rows`` (scalars unchanged)."""

    def pick(v):
        if not isinstance(v, list):
            return v
        return v[rows] if isinstance(rows, int) else list(v[rows])

    return {k: pick(v) for k, v in record.items()}


def stack_trees(trees: list) -> Any:
    """Stack pytrees of equal structure along a new leading member axis."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def unstack_tree(tree: Any, members: int) -> list:
    """The inverse of :func:`stack_trees`."""
    return [jax.tree.map(lambda leaf, i=i: leaf[i], tree) for i in range(members)]


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        from tqdm import tqdm

        return tqdm(total=total, disable=True)
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit="step", dynamic_ncols=True)


def predict(
    state: TrainState, spec: Spec, x: np.ndarray, omega_ratio: np.ndarray, chunk: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """u' (N, F, C) and mu' (N, F) at points x (N, d), evaluated in chunks of ``chunk``."""
    fn = _predict_fn(spec)
    parts = [
        fn(state.params, state.consts, jnp.asarray(x[i : i + chunk]), jnp.asarray(omega_ratio))
        for i in range(0, len(x), chunk)
    ]
    return (
        np.concatenate([np.asarray(p[0]) for p in parts]),
        np.concatenate([np.asarray(p[1]) for p in parts]),
    )


@functools.lru_cache(maxsize=32)
def _predict_fn(spec: Spec):
    def fn(params, consts, x, omega_ratio):
        vu = {"params": params["u"], "constants": consts["u"]}
        vmu = {"params": params["mu"], "constants": consts["mu"]}
        u = physics.u_complex(spec.u_net.apply(vu, x)[0], spec.n_freq, spec.n_comp)
        mu, _ = physics.mu_complex(
            spec.mu_net.apply(vmu, x)[0], None, omega_ratio, spec.cfg.mu_model
        )
        return u, mu

    return jax.jit(fn)
