"""Does the fitted law hold at every frequency? The per-frequency scale of a modulus.

Every residual form is affine in the modulus: r = A[mu] + B with A linear in (mu,
grad mu) and B the rest (the inertia rho omega^2 u, a free pressure). Scaling the fitted
modulus by one complex factor c_f per frequency, the factor that satisfies the PDE best
given the fitted wave is the weighted least-squares solution

    c_f = - sum_{n, c} w_fc p_n conj(A_nfc) B_nfc / sum_{n, c} w_fc p_n |A_nfc|^2

(w_fc the field weights of the loss, p_n the PDE rows). A law that describes the data
leaves c_f ~ 1 at every frequency; a wrong law (Voigt on power-law tissue, or the other
way round) compromises across frequencies, and the c_f spread by about the law's
misfit: the wave at 30 Hz wants a softer modulus than the one at 50 Hz. The check reads
how much c_f differs between frequencies (:func:`spread`), not c_f itself: a common
factor (e.g. a noise bias of the whole map) is no evidence against the law.

The same factors for *another* law, matched voxel by voxel to the fitted modulus
(:func:`matched`), on the same fitted wave, say whether that law would hold better
without fitting it: ``mu_model="auto"`` reads them to skip the second law's fit when the
first is clearly the better (:mod:`helmholtz_pinn.assess.laws`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from helmholtz_pinn.pinn import train
from helmholtz_pinn.pinn.model import once_options

CHUNK = 4096  # points per evaluation


def frequency_scale(
    state: train.TrainState,
    spec: train.Spec,
    problem: train.Problem,
    matched_laws: tuple[str, ...] = (),
) -> np.ndarray:
    """c_f (1 + L, F) complex for one fitted ``state`` (no member axis) on its host
    ``problem`` (module docstring): row 0 for the fitted modulus, then one row per law of
    ``matched_laws`` ("voigt", "springpot") matched to it (:func:`matched`); NaN where no
    PDE row has a residual."""
    count = int(problem.count)
    rows = np.flatnonzero(np.asarray(problem.pde)[:count] > 0)
    num = np.zeros((1 + len(matched_laws), spec.n_freq), complex)
    den = np.zeros((1 + len(matched_laws), spec.n_freq))
    fn = _sums(spec, tuple(matched_laws))
    fixed = tuple(
        jnp.asarray(a) for a in (problem.weight, problem.kappa, problem.omega_ratio, problem.scale)
    )
    for start in range(0, rows.size, CHUNK):
        idx = rows[start : start + CHUNK]
        idx = np.concatenate([idx, np.repeat(idx[-1:], CHUNK - idx.size)])  # one shape
        valid = jnp.asarray(np.arange(CHUNK) < rows.size - start, jnp.float32)
        x = jnp.asarray(np.asarray(problem.x)[idx])
        n, d = fn(state.params, state.consts, x, valid, *fixed)
        num += np.asarray(n)
        den += np.asarray(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, -num / den, np.nan + 0j)


@functools.lru_cache(maxsize=16)
def _sums(spec: train.Spec, matched_laws: tuple[str, ...]):
    def fn(params, consts, x, valid, weight, kappa, omega_ratio, scale):
        points = train.patch_points(spec, x, kappa)
        f = train.evaluate_fields(params, consts, spec, points, omega_ratio)._replace(scale=scale)
        zero = f._replace(mu=jnp.zeros_like(f.mu))
        if f.grad_mu is not None:
            zero = zero._replace(grad_mu=jnp.zeros_like(f.grad_mu))
        b = spec.form.residual(zero, kappa)
        w = valid[:, None, None] * weight[None]
        nums, dens = [], []
        for law in (None, *matched_laws):
            a = spec.form.residual(f if law is None else _as_law(f, omega_ratio, law), kappa) - b
            nums.append(jnp.sum(w * jnp.conj(a) * b, axis=(0, 2)))
            dens.append(jnp.sum(w * jnp.abs(a) ** 2, axis=(0, 2)))
        return jnp.stack(nums), jnp.stack(dens)

    return jax.jit(fn, compiler_options=once_options())


def _as_law(f, omega_ratio: jax.Array, law: str):
    """Fields ``f`` with the modulus and its gradient replaced by ``law`` matched to them
    (:func:`matched`; the gradient by the chain rule, a JVP per direction)."""

    def fit(mu):
        return matched(mu, omega_ratio, law)

    if f.grad_mu is None:
        return f._replace(mu=fit(f.mu))
    grad = jax.vmap(lambda t: jax.jvp(fit, (f.mu,), (t,))[1])(f.grad_mu)
    return f._replace(mu=fit(f.mu), grad_mu=grad)


def matched(mu: jax.Array, omega_ratio: jax.Array, law: str) -> jax.Array:
    """The modulus of ``law`` nearest to mu (..., F) at each point, by least squares over
    the F frequencies (omega_ratio (F,) = omega_f / omega_max):

    - "voigt", mu = G' + i w_f eta:  G' = mean_f Re mu_f, eta = sum_f w_f Im mu_f / sum_f w_f^2;
    - "springpot", mu = K exp(alpha z_f), z_f = ln w_f + i pi / 2: (ln K, alpha) from
      ln|mu_f| = ln K + alpha ln w_f and arg mu_f = alpha pi / 2 (2F real equations).

    A modulus that already follows the law is returned unchanged.
    """
    w = jnp.reshape(omega_ratio, (1,) * (mu.ndim - 1) + (-1,))  # (..., F)
    if law == "voigt":
        storage = jnp.mean(mu.real, axis=-1, keepdims=True)
        eta = jnp.sum(w * mu.imag, axis=-1, keepdims=True) / jnp.sum(w**2)
        return jax.lax.complex(jnp.broadcast_to(storage, mu.shape), eta * w)
    if law != "springpot":
        raise ValueError(f"matched: law {law!r} is not 'voigt' or 'springpot'")
    ones, zeros = jnp.ones_like(omega_ratio), jnp.zeros_like(omega_ratio)
    design = jnp.concatenate(
        [jnp.stack([ones, jnp.log(omega_ratio)], 1), jnp.stack([zeros, ones * jnp.pi / 2], 1)]
    )  # (2F, 2): rows for ln|mu_f|, then for arg mu_f
    log = jnp.log(mu)
    coef = jnp.concatenate([log.real, log.imag], axis=-1) @ jnp.linalg.pinv(design).T
    z = jax.lax.complex(jnp.log(w), jnp.ones_like(w) * jnp.pi / 2)
    return jnp.exp(coef[..., :1] + coef[..., 1:2] * z)


def spread(scale: np.ndarray) -> float:
    """How much the per-frequency factors c_f differ: max_f |c_f / c_mean - 1| with
    c_mean their geometric mean (0 for one frequency; NaN if any is NaN)."""
    c = np.asarray(scale, complex)
    if c.size < 2:
        return 0.0
    mean = np.exp(np.mean(np.log(c)))
    return float(np.max(np.abs(c / mean - 1)))
