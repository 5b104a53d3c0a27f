"""Training: one state pytree, one pure step, one ``lax.scan`` block.

Loss per step on a batch of B voxels drawn inside the mask from fold_in(key, step):
    L = sum_fc w_fc [ mean |u'_net - u'_obs|^2 + w(step) mean |r|^2 ] / sum_fc w_fc,
    w(step) = pde_weight min(1, step / pde_warmup)
with r the residual of the configured PDE form (:mod:`helmholtz_pinn.pinn.forms`), its mean
taken over the batch's voxels outside the PDE margin (``Problem.pde``), and w_fc the
per-field weight of the Problem (1 unless noise-aware weighting sets it). A block of
``n_steps`` full steps runs on the device; the host loop (:mod:`helmholtz_pinn.fit.host_loop`)
reads the block's losses once and drives the schedules between blocks. An optional
L-BFGS phase (:func:`helmholtz_pinn.pinn.lbfgs.lbfgs_fn`) follows the Adam blocks on one
fixed sample; :func:`helmholtz_pinn.pinn.predict.predict` evaluates the networks on a grid.

Under ``shard_map`` (``axis_name`` set: data parallel over the voxels) every device
samples its own shard and the gradient of the global batch mean is the share-weighted
sum of the per-device gradients.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from helmholtz_pinn import laws
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.pinn import forms, programs, scaling
from helmholtz_pinn.pinn.model import (
    GRAD,
    HESS,
    LAP,
    VALUE,
    FourierMLP,
    apply_pair,
    split_jet,
)

LOSS_NAMES = ("loss", "data", "pde")


class Problem(NamedTuple):
    """Device-side data, nondimensional: voxel coordinates x (M, d) in the mask,
    observed u (M, F, C) complex, kappa (F,), omega_ratio (F,), ``count`` (the valid
    rows; rows past it pad a problem to a batch's common M), ``weight`` (F, C), the
    weight of each field in both loss terms, ``scale`` (F, C), each component's
    data scale relative to the largest of its frequency, and ``pde`` (M,) float, 1 where
    a row's PDE residual is fitted and 0 in the margin (``Config.pde_margin``)."""

    x: Any
    u: Any
    kappa: Any
    omega_ratio: Any
    count: Any
    weight: Any
    scale: Any
    pde: Any


class TrainState(NamedTuple):
    """Everything that changes during training, as one pytree."""

    params: Any
    consts: Any
    opt_state: Any
    step: Any
    key: Any


@dataclasses.dataclass(frozen=True)
class Spec:
    """What the compiled program depends on, and nothing else (it keys the compile
    cache): data shapes, network sizes, PDE form, batch size and PDE weight schedule.
    Seeds, step counts, learning rates and Fourier scales are not in it."""

    ndim: int
    n_freq: int
    n_comp: int
    width: int
    depth: int
    mu_width: int
    mu_depth: int
    n_features: int
    activation: str
    pde: str
    mu_model: str
    aux_network: str
    batch_size: int
    pde_weight: float
    pde_warmup: int

    def __post_init__(self):
        """The PDE form must be known (a :class:`~helmholtz_pinn.errors.ConfigError`
        otherwise) and the law one a program fits for ``n_freq`` frequencies
        (:func:`helmholtz_pinn.laws.resolve`: "auto" is chosen by
        :func:`helmholtz_pinn.fit.inversion.invert`, a law needing more frequencies is
        refused; one frequency: :func:`helmholtz_pinn.fit.plan.laws`)."""
        forms.get(self.pde)
        if self.mu_model == "auto":
            raise ConfigError(
                f"mu_model='auto' is chosen from the data by invert() ({self.n_freq} "
                f"frequencies); a program needs one of {', '.join(laws.available())}"
            )
        laws.resolve(self.mu_model, self.n_freq)  # a law needing more frequencies: refused

    @property
    def form(self) -> forms.Form:
        return forms.get(self.pde)

    @property
    def u_order(self) -> int:
        needs = self.form.needs
        return (
            HESS
            if "hess_u" in needs
            else LAP
            if "lap_u" in needs
            else GRAD
            if "grad_u" in needs
            else VALUE
        )

    @property
    def patch_size(self) -> int:
        """Points the networks see per sampled voxel: Q of the form's stencil, else 1."""
        stencil = self.form.stencil
        return 1 if stencil is None else len(stencil(self.ndim).offsets)

    @property
    def mu_order(self) -> int:
        return GRAD if {"grad_mu", "grad_aux"} & self.form.needs else VALUE

    @property
    def aux_channels(self) -> int:
        """Channels of the form's auxiliary fields: 2 F per field."""
        return 2 * self.n_freq * self.form.aux

    @property
    def u_outputs(self) -> int:
        """Channels of the u-network: 2 F C of u, then the auxiliary fields if it has them."""
        return 2 * self.n_freq * self.n_comp + self.aux_channels * (self.aux_network == "u")

    @property
    def mu_outputs(self) -> int:
        """Channels of the mu-network: the modulus, then the auxiliary fields if it has them."""
        n_mu = laws.get(self.mu_model).channels(self.n_freq)
        return n_mu + self.aux_channels * (self.aux_network == "mu")

    def networks(self, sigma_u: float, sigma_mu: float) -> tuple[FourierMLP, FourierMLP]:
        """The u- and mu-networks; sigma (cycles per field of view) only sets B at init."""
        u = FourierMLP(
            self.ndim,
            self.u_outputs,
            self.width,
            self.depth,
            self.n_features,
            sigma_u,
            self.activation,
        )
        mu = FourierMLP(
            self.ndim,
            self.mu_outputs,
            self.mu_width,
            self.mu_depth,
            self.n_features,
            sigma_mu,
            self.activation,
        )
        return u, mu


OPTIMIZER = optax.inject_hyperparams(optax.adam)  # the rate lives in the state: the host sets it


def init_state(
    spec: Spec,
    seed: int,
    sigma_u: float,
    sigma_mu: float,
    learning_rate: float,
    ratio_z: float = 1.0,
) -> TrainState:
    """Initialise both networks (fixed Fourier matrices in ``consts``) and Adam.
    In 3-D, the rows of both Fourier matrices for the third axis are scaled by
    ``ratio_z`` (the through-plane scale as a fraction of the in-plane one). One compiled
    program per spec: the scales, the seed and the rate are its arguments, so the data's
    own scales never recompile it (a second run is served by the compile cache)."""
    key = jax.random.PRNGKey(seed)  # outside the program: a seed may exceed int32
    if learning_rate is None:  # a Config's None is decided by the run plan, not here
        raise ConfigError("learning_rate must be a rate (> 0); got None: plan the run first")
    rate = float(learning_rate)
    return _init_program(spec)(key, float(sigma_u), float(sigma_mu), rate, float(ratio_z))


@programs.stored
def _init_program(spec: Spec):
    """:func:`_init_state` of ``spec`` as one compiled program."""
    return programs.Program(functools.partial(_init_state, spec))


def _init_state(spec, key, sigma_u, sigma_mu, learning_rate, ratio_z) -> TrainState:
    """B = sigma N(0, 1) (:class:`~helmholtz_pinn.pinn.model.FourierMLP`): drawn at
    sigma 1, then scaled by the traced sigma, the same float32 product."""
    key_u, key_mu, key_data = jax.random.split(key, 3)
    x = jnp.zeros((1, spec.ndim), jnp.float32)
    u_net, mu_net = spec.networks(1.0, 1.0)
    vu, vmu = u_net.init(key_u, x), mu_net.init(key_mu, x)
    params = {"u": vu["params"], "mu": vmu["params"]}
    scale = {"u": sigma_u, "mu": sigma_mu}
    consts = {"u": vu["constants"], "mu": vmu["constants"]}
    consts = {k: {**c, "B": c["B"] * scale[k]} for k, c in consts.items()}
    if spec.ndim == 3:  # times 1 where the through-plane scale is the in-plane one: exact
        consts = {k: {**c, "B": c["B"].at[2].multiply(ratio_z)} for k, c in consts.items()}
    opt_state = OPTIMIZER(learning_rate=learning_rate).init(params)
    return TrainState(params, consts, opt_state, jnp.zeros((), jnp.int32), key_data)


def patch_points(spec: Spec, x: jax.Array, kappa: jax.Array) -> jax.Array:
    """Where the form reads the fields for the sampled voxels x (N, d): x itself for a
    pointwise form; for a form with a stencil the points c + h s_q of the patch around each
    voxel c, (N, Q, d) (row 0 the centre), h = ``form.half_width(kappa)``."""
    form = spec.form
    if form.stencil is None:
        return x
    offsets = jnp.asarray(form.stencil(spec.ndim).offsets, x.dtype)
    return x[:, None, :] + form.half_width(kappa).astype(x.dtype) * offsets[None]


def evaluate_fields(params, consts, spec: Spec, x: jax.Array, omega_ratio: jax.Array):
    """The :class:`helmholtz_pinn.pinn.forms.Fields` the PDE form needs, at points x (N, d),
    or at patches x (N, Q, d) (:func:`patch_points`; every field then has a patch axis).

    Both networks go through :func:`helmholtz_pinn.pinn.model.apply_pair`, each carrying only
    the derivative order the form asks for.
    """
    if x.ndim == 3:
        flat = evaluate_fields(params, consts, spec, x.reshape(-1, x.shape[-1]), omega_ratio)
        return forms.with_patch_axis(flat, *x.shape[:2])
    orders, depths = (spec.u_order, spec.mu_order), (spec.depth, spec.mu_depth)
    su, smu = apply_pair(params, consts, x, spec.activation, orders, depths)
    return fields_of_jets(su, smu, spec, omega_ratio)


def fields_of_jets(su: jax.Array, smu: jax.Array, spec: Spec, omega_ratio: jax.Array):
    """The :class:`helmholtz_pinn.pinn.forms.Fields` from the jet stacks of the u- and
    mu-networks at N points (:func:`helmholtz_pinn.pinn.model.apply_jet`, of orders
    ``spec.u_order`` and ``spec.mu_order``): u' from the first 2 F C channels of the
    u-network, mu' from the law's channels of the mu-network
    (:func:`helmholtz_pinn.laws.get`), the form's auxiliary fields from the network that
    carries them (``spec.aux_network``)."""
    ju = split_jet(su, spec.ndim, spec.u_order)
    jm = split_jet(smu, spec.ndim, spec.mu_order)
    n_mu = laws.get(spec.mu_model).channels(spec.n_freq)
    grad_m = None if jm.grad is None else jm.grad[..., :n_mu]
    mu, grad_mu = laws.get(spec.mu_model).network(jm.value[..., :n_mu], grad_m, omega_ratio)
    to_u = functools.partial(scaling.u_complex, n_freq=spec.n_freq, n_comp=spec.n_comp)
    to_a = functools.partial(scaling.u_complex, n_freq=spec.n_freq, n_comp=spec.form.aux)
    n_u = 2 * spec.n_freq * spec.n_comp

    def maybe(fn, a, cut):
        return None if a is None else fn(a[..., cut])

    u = slice(None, n_u)
    ja, aux = (ju, slice(n_u, None)) if spec.aux_network == "u" else (jm, slice(n_mu, None))
    return forms.Fields(
        u=to_u(ju.value[..., u]),
        grad_u=maybe(to_u, ju.grad, u),
        lap_u=maybe(to_u, ju.lap, u),
        hess_u=maybe(to_u, ju.hess, u),
        mu=mu,
        grad_mu=grad_mu,
        aux=to_a(ja.value[..., aux]) if spec.form.aux else None,
        grad_aux=maybe(to_a, ja.grad, aux) if spec.form.aux else None,
    )


def misfits(params, consts, spec: Spec, problem: Problem, batch) -> tuple[jax.Array, jax.Array]:
    """(u' - u'_obs (N, F, C), r (N, F, C)), both complex: the data misfit and the PDE
    residual on ``batch`` (as :func:`loss_terms` takes it), unweighted. A form with a
    stencil reads its patches (:func:`patch_points`) and the data term u at their centres."""
    x, u_obs, _, _ = batch
    points = patch_points(spec, x, problem.kappa)
    f = evaluate_fields(params, consts, spec, points, problem.omega_ratio)
    f = f._replace(scale=problem.scale)
    r = spec.form.residual(f, problem.kappa)
    u = f.u if spec.form.stencil is None else f.u[:, 0]
    return u - u_obs, r


def _mean_norm(problem: Problem, w_point: jax.Array) -> jax.Array:
    """max(sum_p w_p, 1) sum_fc w_fc: the denominator of a weighted mean of :func:`loss_terms`."""
    return jnp.maximum(jnp.sum(w_point), 1.0) * jnp.sum(problem.weight)


def loss_terms(params, consts, spec: Spec, problem: Problem, batch) -> tuple[jax.Array, jax.Array]:
    """(data loss, PDE loss) on ``batch`` = (x, u_obs, point weight (N,), PDE point weight
    (N,)): weighted means of |u' - u'_obs|^2 and |r|^2 (:func:`misfits`) over points
    (weight 0 for padding, and for the PDE in the margin) and fields (w_fc). The one place
    the loss is formed (:func:`residual_vector` is its square root, for Gauss-Newton)."""
    _, _, point, pde_point = batch
    misfit, r = misfits(params, consts, spec, problem, batch)
    w_fc = problem.weight

    def mean(sq, w_point):
        return jnp.sum(w_point[:, None, None] * w_fc[None] * sq) / _mean_norm(problem, w_point)

    return mean(jnp.abs(misfit) ** 2, point), mean(jnp.abs(r) ** 2, pde_point)


def weighted_loss(params, consts, spec: Spec, problem: Problem, batch, weight: jax.Array):
    """(data + weight pde, (data, pde)) of :func:`loss_terms`: what Adam and L-BFGS
    minimise, ``weight`` the PDE weight of the step (:func:`pde_weight`)."""
    data, pde = loss_terms(params, consts, spec, problem, batch)
    return data + weight * pde, (data, pde)


def residual_vector(params, consts, spec: Spec, problem: Problem, batch, weight: jax.Array):
    """The loss of :func:`weighted_loss` as a sum of squares, for Gauss-Newton
    (:mod:`helmholtz_pinn.pinn.gauss_newton`): the real vector
        rho = [sqrt(W_data) (u' - u'_obs), sqrt(weight W_pde) r]  (real, imaginary parts),
    W_term = w_p w_fc / (max(sum_p w_p, 1) sum_fc w_fc) with w_p the term's point weight,
    flattened (length 4 N F C), so that |rho|^2 = data + weight pde of :func:`loss_terms`."""
    _, _, point, pde_point = batch
    misfit, r = misfits(params, consts, spec, problem, batch)

    def scaled(z, w_point, factor=1.0):
        w = w_point[:, None, None] * problem.weight[None] / _mean_norm(problem, w_point)
        z = jnp.sqrt(factor * w) * z
        return (z.real.reshape(-1), z.imag.reshape(-1))

    return jnp.concatenate([*scaled(misfit, point), *scaled(r, pde_point, weight)])


def pde_weight(step: jax.Array, spec: Spec) -> jax.Array:
    """w(step) = pde_weight * min(1, step / pde_warmup)."""
    if spec.pde_warmup == 0:
        return jnp.asarray(spec.pde_weight, jnp.float32)
    return spec.pde_weight * jnp.minimum(1.0, step.astype(jnp.float32) / spec.pde_warmup)


def sample_batch(problem: Problem, key: jax.Array, step: jax.Array, size: int):
    """(x, u_obs, weight, PDE weight): ``size`` valid voxels drawn uniformly from
    fold_in(key, step), or every row (padding weighted 0) when ``size`` >= M. The one
    place that decides between full batch and sampling."""
    n = problem.x.shape[0]
    if size >= n:
        point = (jnp.arange(n) < problem.count).astype(jnp.float32)
        return problem.x, problem.u, point, point * problem.pde
    idx = jax.random.randint(jax.random.fold_in(key, step), (size,), 0, problem.count)
    return problem.x[idx], problem.u[idx], jnp.ones((size,), jnp.float32), problem.pde[idx]


def train_step(
    state: TrainState, problem: Problem, spec: Spec, *, axis_name: str | None = None
) -> tuple[TrainState, jax.Array]:
    """One full step: sample, loss, gradient for both networks, Adam update.

    With ``axis_name`` (inside ``shard_map``) ``problem`` is this device's shard (its
    ``count`` of shape (1,)); the device samples with key fold_in(key, device index) and
    the gradient and losses are the share-weighted sums over devices (the global mean).
    """
    key = state.key
    if axis_name is not None:
        problem = problem._replace(count=problem.count[0])
        key = jax.random.fold_in(key, jax.lax.axis_index(axis_name))
    batch = sample_batch(problem, key, state.step, spec.batch_size)
    w = pde_weight(state.step, spec)
    loss_fn = functools.partial(
        weighted_loss, consts=state.consts, spec=spec, problem=problem, batch=batch, weight=w
    )
    (loss, (data, pde)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    losses = jnp.stack([loss, data, pde])
    if axis_name is not None:
        share = jnp.sum(batch[2]) / jax.lax.psum(jnp.sum(batch[2]), axis_name)
        grads, losses = jax.lax.psum(jax.tree.map(lambda g: share * g, (grads, losses)), axis_name)
    updates, opt_state = OPTIMIZER(learning_rate=0.0).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return TrainState(params, state.consts, opt_state, state.step + 1, state.key), losses


def block_fn(
    spec: Spec,
    n_steps: int,
    *,
    members: bool = False,
    shared_problem: bool = False,
    axis_name: str | None = None,
) -> Callable:
    """``(state, problem) -> (state, losses (n_steps, 3))``: n_steps steps in one scan.

    ``members``: the state has a leading member axis (independent fits, vmapped); the
    problem has one too unless ``shared_problem`` (an ensemble of seeds on one problem).
    ``axis_name``: see :func:`train_step`. The one scan of the package.
    """

    def block(state: TrainState, problem: Problem):
        def body(s, _):
            return train_step(s, problem, spec, axis_name=axis_name)

        return jax.lax.scan(body, state, None, n_steps)

    if not members:
        return block
    return jax.vmap(block, in_axes=(0, None if shared_problem else 0))


def set_learning_rate(state: TrainState, lr) -> TrainState:
    """The same state with Adam's rate replaced (no recompile: same dtype and shape).

    ``lr`` is a float, or one rate per member (S,) for a stacked state. A placed state
    keeps its placement: the new rate is put where the old one was (across processes,
    each fills its own devices), so the state stays one global array per leaf.
    """
    hyper = dict(state.opt_state.hyperparams)
    old = hyper["learning_rate"]
    new = np.broadcast_to(np.asarray(lr, old.dtype), old.shape)
    if isinstance(old, jax.Array):
        new = jax.make_array_from_callback(old.shape, old.sharding, lambda index: new[index])
    hyper["learning_rate"] = new
    return state._replace(opt_state=state.opt_state._replace(hyperparams=hyper))


def stack_trees(trees: list) -> Any:
    """Stack pytrees of equal structure along a new leading member axis (NumPy, host)."""
    return jax.tree.map(lambda *leaves: np.stack([np.asarray(a) for a in leaves]), *trees)


def unstack_tree(tree: Any, members: int) -> list:
    """The inverse of :func:`stack_trees`."""
    return [jax.tree.map(lambda leaf, i=i: leaf[i], tree) for i in range(members)]
