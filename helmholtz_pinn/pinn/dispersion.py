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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from helmholtz_pinn.pinn import programs, train
from helmholtz_pinn.pinn.compile_options import once_options

CHUNK = 4096  # points per evaluation


def frequency_scale(
    state: train.TrainState, spec: train.Spec, problem: train.Problem
) -> np.ndarray:
    """c_f (F,) complex for one fitted ``state`` (no member axis) on its host
    ``problem`` (module docstring); NaN where no PDE row has a residual."""
    count = int(problem.count)
    rows = np.flatnonzero(np.asarray(problem.pde)[:count] > 0)
    num = np.zeros(spec.n_freq, complex)
    den = np.zeros(spec.n_freq)
    fn = _sums(spec)
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


@programs.stored
def _sums(spec: train.Spec):
    def fn(params, consts, x, valid, weight, kappa, omega_ratio, scale):
        points = train.patch_points(spec, x, kappa)
        f = train.evaluate_fields(params, consts, spec, points, omega_ratio)._replace(scale=scale)
        return scale_sums(spec.form, f, kappa, weight, valid)

    return programs.Program(fn, compiler_options=once_options())


def scale_sums(form, f, kappa: jax.Array, weight: jax.Array, valid: jax.Array):
    """(sum_{n, c} w_fc p_n conj(A) B, sum_{n, c} w_fc p_n |A|^2), each (F,): the
    numerator (without its sign) and the denominator of c_f for the Fields ``f`` of the
    PDE ``form`` at N points weighted ``valid`` (N,) = p_n, the fields weighted ``weight``
    (F, C) = w_fc; B = r(mu = 0), A = r - B (the residual is affine in mu)."""
    zero = f._replace(mu=jnp.zeros_like(f.mu))
    if f.grad_mu is not None:
        zero = zero._replace(grad_mu=jnp.zeros_like(f.grad_mu))
    b = form.residual(zero, kappa)
    a = form.residual(f, kappa) - b
    w = valid[:, None, None] * weight[None]
    return jnp.sum(w * jnp.conj(a) * b, axis=(0, 2)), jnp.sum(w * jnp.abs(a) ** 2, axis=(0, 2))


def spread(scale: np.ndarray) -> float:
    """How much the per-frequency factors c_f differ: max_f |c_f / c_mean - 1| with
    c_mean their geometric mean (0 for one frequency; NaN if any is NaN)."""
    c = np.asarray(scale, complex)
    if c.size < 2:
        return 0.0
    mean = np.exp(np.mean(np.log(c)))
    return float(np.max(np.abs(c / mean - 1)))
