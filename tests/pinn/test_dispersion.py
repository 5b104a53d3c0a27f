"""The per-frequency factor of a fitted law: the least-squares c_f that makes the PDE
hold best, on fields with a known answer, and its spread."""

import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit.plan import program
from helmholtz_pinn.pinn import dispersion, forms, train

K = np.array([7.0, 11.0])  # wavenumbers (nondimensional) per frequency
M = np.array([1.2 + 0.1j, 0.9 + 0.3j])  # the "fitted" modulus per frequency
KAPPA = np.array([50.0, 120.0])


def _fields(params, consts, spec, x, omega_ratio):
    """Plane waves u_f = exp(i k_f x_0) with Lap u = -k_f^2 u, except on rows with
    x_1 > 0.5, whose Laplacian is corrupted (they carry no PDE residual)."""
    u = jnp.exp(1j * x[:, :1] * jnp.asarray(K)[None])[..., None]  # (N, F, 1)
    bad = jnp.where(x[:, 1:2] > 0.5, 10.0, 1.0)[..., None]
    lap = -(jnp.asarray(K)[None, :, None] ** 2) * u * bad
    mu = jnp.broadcast_to(jnp.asarray(M, jnp.complex64)[None], (x.shape[0], 2))
    return forms.Fields(u=u, grad_u=None, lap_u=lap, hess_u=None, mu=mu, grad_mu=None)


def test_frequency_scale_is_the_modulus_the_wave_asks_for(monkeypatch, rng):
    """Helmholtz: c_f m_f (-k_f^2) / kappa_f + 1 = 0, so c_f = kappa_f / (k_f^2 m_f),
    over the PDE rows only, in chunks with padding."""
    monkeypatch.setattr(dispersion.train, "evaluate_fields", _fields)
    monkeypatch.setattr(dispersion, "CHUNK", 64)
    dispersion._sums.cache_clear()
    spec = program(Config(**{**SMALL, "pde": "helmholtz"}), 2, 2, 1)
    x = rng.uniform(size=(300, 2)).astype(np.float32)
    problem = train.Problem(
        x=np.concatenate([x, np.full((20, 2), 9.0, np.float32)]),  # 20 padding rows
        u=None,
        kappa=KAPPA.astype(np.float32),
        omega_ratio=np.array([0.5, 1.0], np.float32),
        count=np.asarray(300, np.int32),
        weight=np.ones((2, 1), np.float32),
        scale=np.ones((2, 1), np.float32),
        pde=np.concatenate([(x[:, 1] <= 0.5), np.ones(20)]).astype(np.float32),
    )
    state = train.TrainState(params=None, consts=None, opt_state=None, step=0, key=None)
    c = dispersion.frequency_scale(state, spec, problem)
    dispersion._sums.cache_clear()
    np.testing.assert_allclose(c, KAPPA / (K**2 * M), rtol=2e-5)


def test_spread_reads_differences_between_frequencies_not_a_common_factor():
    assert dispersion.spread(np.array([1.3 + 0.2j, 1.3 + 0.2j])) == pytest.approx(0.0, abs=1e-12)
    assert dispersion.spread(np.array([0.95, 1.0, 1.05])) == pytest.approx(0.05, rel=0.02)
    assert dispersion.spread(np.array([2.0])) == 0.0
