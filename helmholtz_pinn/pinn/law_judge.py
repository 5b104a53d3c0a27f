"""The laws judged on one fitted wave: each law's modulus network fitted with u held fixed.

The wave network does not depend on the law (the data term reads u alone). Given one
fit's wave, its u-network's jet (u and the derivatives the PDE form reads) at a sample of
the PDE rows, held fixed, each candidate law's modulus network is fitted alone to the PDE

    min_theta  sum_{n, f, c} p_n w_fc |r_nfc(u, mu_theta)|^2 / (sum_n p_n sum_fc w_fc)

(p_n the rows' PDE weights, w_fc the field weights; Adam on the whole sample), and the
law's per-frequency factors c_f and their spread (:mod:`helmholtz_pinn.pinn.dispersion`)
are read on that modulus and the same wave. Every law sees the same wave, so the spreads
differ by the laws alone. A law judged this way costs a fraction of a fit: the u-network's
derivatives are computed once, each step evaluates only the smaller mu-network.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from helmholtz_pinn import laws
from helmholtz_pinn.pinn import dispersion, forms, programs, train
from helmholtz_pinn.pinn.compile_options import once_options
from helmholtz_pinn.pinn.model import apply_jet

POINTS = 1024  # PDE rows of the sample (every one when the problem has fewer)
STEPS = 1000  # Adam steps of each law's modulus network
LEARNING_RATE = 3e-3  # decays to a tenth over the steps (cosine)
SEED = 0


class Wave(NamedTuple):
    """One fit's wave at a sample of its problem's PDE rows, nondimensional: ``x`` the
    points (N, d), or the patches (N, Q, d) of a form with a stencil; ``jet_u`` the
    u-network's jet stack at the (flattened) points; ``valid`` (N,) the rows' PDE
    weights; ``consts_mu`` the mu-network's Fourier matrix (every law's network uses it)."""

    x: Any
    jet_u: Any
    valid: Any
    consts_mu: Any


def wave_of(
    state: train.TrainState, spec: train.Spec, problem: train.Problem, points: int = POINTS
) -> Wave:
    """The :class:`Wave` of one fitted ``state`` (no member axis) on its host
    ``problem``: at most ``points`` PDE rows, evenly spaced in the problem's order."""
    rows = np.flatnonzero(np.asarray(problem.pde)[: int(problem.count)] > 0)
    if rows.size > points:
        rows = rows[np.linspace(0, rows.size - 1, points).round().astype(int)]
    x, kappa = (jnp.asarray(a) for a in (np.asarray(problem.x)[rows], problem.kappa))
    x, jet_u = _wave(spec)(state.params["u"], state.consts["u"], x, kappa)
    valid = jnp.asarray(np.asarray(problem.pde)[rows], jnp.float32)
    return Wave(x, jet_u, valid, state.consts["mu"])


@programs.stored
def _wave(spec: train.Spec):
    """(points or patches, the u-network's jet there) as one compiled program."""

    def fn(params, consts, x, kappa):
        x = train.patch_points(spec, x, kappa)
        flat = x.reshape(-1, x.shape[-1])
        return x, apply_jet(params, consts, flat, spec.activation, spec.u_order, spec.depth)

    return programs.Program(fn, compiler_options=once_options())


@programs.stored
def _init(spec: train.Spec):
    """The mu-network's initial parameters from a key, as one compiled program."""
    net = spec.networks(1.0, 1.0)[1]
    x = jnp.zeros((1, spec.ndim), jnp.float32)
    return programs.Program(lambda key: net.init(key, x)["params"], compiler_options=once_options())


def law_spec(spec: train.Spec, law: str) -> train.Spec:
    """``spec`` with the modulus of ``law`` (the same wave network and form)."""
    return dataclasses.replace(spec, mu_model=law)


def fields(params_mu, wave: Wave, spec: train.Spec, problem: train.Problem) -> forms.Fields:
    """The Fields of the PDE form: the fixed wave's and those of the mu-network
    ``params_mu`` of ``spec``'s law, with a patch axis for a form with a stencil."""
    x = wave.x.reshape(-1, wave.x.shape[-1])
    jet_mu = apply_jet(params_mu, wave.consts_mu, x, spec.activation, spec.mu_order, spec.mu_depth)
    f = train.fields_of_jets(wave.jet_u, jet_mu, spec, problem.omega_ratio)
    if wave.x.ndim == 3:
        f = forms.with_patch_axis(f, *wave.x.shape[:2])
    return f._replace(scale=problem.scale)


def pde_loss(params_mu, wave: Wave, spec: train.Spec, problem: train.Problem) -> jax.Array:
    """The PDE term of the loss (module docstring) on the fixed wave."""
    r = spec.form.residual(fields(params_mu, wave, spec, problem), problem.kappa)
    w = wave.valid[:, None, None] * problem.weight[None]
    norm = jnp.maximum(jnp.sum(wave.valid), 1.0) * jnp.sum(problem.weight)
    return jnp.sum(w * jnp.abs(r) ** 2) / norm


def fit_modulus(
    wave: Wave,
    spec: train.Spec,
    problem: train.Problem,
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    seed: int = SEED,
) -> tuple[Any, np.ndarray, np.ndarray]:
    """(params, loss per step (steps,), c_f (F,) complex): the mu-network of ``spec``'s
    law, initialised from ``seed``, fitted to the PDE on the fixed ``wave`` by ``steps``
    Adam steps, and its per-frequency factors there (:func:`frequency_scale`), in one
    compiled program."""
    params = _init(spec)(jax.random.PRNGKey(seed))
    fit = _fit(spec, steps, float(learning_rate))
    params, losses, sums = fit(params, wave, _device(problem))
    return params, np.asarray(losses), _ratio(*sums)


def _device(problem: train.Problem) -> train.Problem:
    """The small per-field arrays of ``problem`` (the points are the wave's)."""
    keep = ("kappa", "omega_ratio", "weight", "scale")
    small = {k: jnp.asarray(getattr(problem, k)) for k in keep}
    return problem._replace(**small, x=None, u=None, pde=None)


@programs.stored
def _fit(spec: train.Spec, steps: int, learning_rate: float):
    schedule = optax.cosine_decay_schedule(learning_rate, steps, alpha=0.1)
    opt = optax.adam(schedule)

    def fn(params, wave, problem):
        def body(carry, _):
            p, s = carry
            loss, g = jax.value_and_grad(pde_loss)(p, wave, spec, problem)
            updates, s = opt.update(g, s, p)
            return (optax.apply_updates(p, updates), s), loss

        (params, _), losses = jax.lax.scan(body, (params, opt.init(params)), None, steps)
        return params, losses, _sums(spec, params, wave, problem)

    return programs.Program(fn, compiler_options=once_options())


def frequency_scale(params_mu, wave: Wave, spec: train.Spec, problem: train.Problem) -> np.ndarray:
    """c_f (F,) complex of the law's modulus ``params_mu`` on the fixed wave: the
    least-squares factor per frequency of :mod:`helmholtz_pinn.pinn.dispersion`, from
    :func:`helmholtz_pinn.pinn.dispersion.scale_sums`; NaN where no row has a residual."""
    return _ratio(*_scale_sums(spec)(params_mu, wave, _device(problem)))


def _sums(spec: train.Spec, params_mu, wave: Wave, problem: train.Problem):
    f = fields(params_mu, wave, spec, problem)
    return dispersion.scale_sums(spec.form, f, problem.kappa, problem.weight, wave.valid)


@programs.stored
def _scale_sums(spec: train.Spec):
    return programs.Program(functools.partial(_sums, spec), compiler_options=once_options())


def _ratio(num, den) -> np.ndarray:
    """c_f = -num / den (NaN where den is 0)."""
    num, den = np.asarray(num), np.asarray(den)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, -num / den, np.nan + 0j)


class Judged(NamedTuple):
    """One law on the fixed wave: its ``spread`` (max_f |c_f / mean c - 1|), the factors
    ``scale`` (F,) complex and the PDE loss its modulus reached (``loss``)."""

    spread: float
    scale: np.ndarray
    loss: float


def judge(
    state: train.TrainState,
    spec: train.Spec,
    problem: train.Problem,
    candidates: tuple[str, ...],
    steps: int = STEPS,
    points: int = POINTS,
) -> dict[str, Judged]:
    """Each law of ``candidates`` (names in :mod:`helmholtz_pinn.laws`) judged on the wave
    of the fitted ``state`` (one fit, no member axis) on its host ``problem``."""
    wave = wave_of(state, spec, problem, points)
    out = {}
    for law in candidates:
        laws.resolve(law, spec.n_freq)  # a law the data's frequencies cannot hold: refused
        _, losses, c = fit_modulus(wave, law_spec(spec, law), problem, steps)
        out[law] = Judged(dispersion.spread(c), c, float(losses[-1]))
    return out
