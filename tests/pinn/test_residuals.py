"""Residuals vanish on analytic solutions; the complex-modulus map has the right gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helmholtz_pinn import laws
from helmholtz_pinn.pinn import forms, scaling


def _plane_wave(mu_pa, f_hz, length, x_nd, direction):
    """u = exp(i k n.x) in physical units with k^2 = rho omega^2 / mu, on x = L x'."""
    k = np.sqrt(1000.0 * (2 * np.pi * f_hz) ** 2 / mu_pa)
    kn = k * length * np.asarray(direction)  # wave vector in nondimensional units
    u = np.exp(1j * x_nd @ kn)
    grad = 1j * kn[:, None] * u[None]
    lap = -(kn @ kn) * u
    return u, grad, lap


@pytest.mark.parametrize("form", ["helmholtz", "hetero"])
def test_plane_wave_has_zero_residual(form):
    freqs = np.array([50.0, 80.0])
    mu_pa = 3000.0 + 1j * 2 * np.pi * freqs * 1.0  # Voigt, eta = 1 Pa s
    length, mu_ref = 0.08, 2500.0
    scales = scaling.make_scales(freqs, length, mu_ref, 1000.0)
    x = np.random.default_rng(0).uniform(size=(50, 2))
    dirs = [(0.6, 0.8), (1.0, 0.0)]
    fields = [
        [_plane_wave(m, f, length, x, d) for d in dirs] for m, f in zip(mu_pa, freqs, strict=True)
    ]
    u = np.stack([np.stack([c[0] for c in fc], -1) for fc in fields], 1)  # (N, F, C)
    grad = np.stack([np.stack([c[1] for c in fc], -1) for fc in fields], 2)  # (d, N, F, C)
    lap = np.stack([np.stack([c[2] for c in fc], -1) for fc in fields], 1)
    mu = np.broadcast_to(mu_pa / mu_ref, (50, 2))
    kappa = jnp.asarray(scales.kappa)
    zero = np.zeros((2, 50, 2))
    r = forms.get(form).residual(forms.Fields(u, grad, lap, None, mu, zero), kappa)
    assert np.max(np.abs(r)) < 1e-5  # float32 rounding of kappa
    # a 10 % wrong modulus leaves a residual of ~10 %: the test can fail
    bad = forms.get(form).residual(forms.Fields(u, grad, lap, None, 1.1 * mu, zero), kappa)
    assert np.max(np.abs(bad)) > 0.05


def test_hetero_residual_is_div_mu_grad_u():
    """(mu Lap u + grad mu . grad u) equals div(mu grad u) by autodiff for smooth fields."""
    with jax.enable_x64(True):

        def u_fn(p):
            return jnp.sin(3 * p[0]) * jnp.exp(1j * 2 * p[1])

        def mu_fn(p):
            return 1.5 + 0.4 * jnp.cos(2 * p[0] + p[1]) + 0.1j * p[0]

        def flux_div(p):
            def flux(q):
                gr = jax.jacfwd(lambda z: u_fn(z).real)(q) + 1j * jax.jacfwd(
                    lambda z: u_fn(z).imag
                )(q)
                return mu_fn(q) * gr

            jr = jax.jacfwd(lambda q: flux(q).real)(p)
            ji = jax.jacfwd(lambda q: flux(q).imag)(p)
            return jnp.trace(jr) + 1j * jnp.trace(ji)

        pts = jax.random.uniform(jax.random.key(0), (9, 2), dtype=jnp.float64)

        def cgrad(fn, p):
            return jax.jacfwd(lambda z: fn(z).real)(p) + 1j * jax.jacfwd(lambda z: fn(z).imag)(p)

        def clap(fn, p):
            hr = jax.hessian(lambda z: fn(z).real)(p)
            hi = jax.hessian(lambda z: fn(z).imag)(p)
            return jnp.trace(hr) + 1j * jnp.trace(hi)

        u = jax.vmap(u_fn)(pts)[:, None, None]
        gu = jax.vmap(lambda p: cgrad(u_fn, p))(pts).T[:, :, None, None]
        lu = jax.vmap(lambda p: clap(u_fn, p))(pts)[:, None, None]
        mu = jax.vmap(mu_fn)(pts)[:, None]
        gmu = jax.vmap(lambda p: cgrad(mu_fn, p))(pts).T[:, :, None]
        kappa = jnp.array([7.0])
        r = forms.get("hetero").residual(forms.Fields(u, gu, lu, None, mu, gmu), kappa)
        expected = jax.vmap(flux_div)(pts)[:, None, None] / 7.0 + u
        assert jnp.max(jnp.abs(r - expected)) < 1e-12


@pytest.mark.parametrize("mu_model", ["voigt", "per-frequency", "springpot-dashpot"])
def test_mu_gradient_matches_autodiff(mu_model):
    with jax.enable_x64(True):
        ratio = jnp.array([0.5, 0.75, 1.0])
        n_out = laws.get(mu_model).channels(3)
        w = jax.random.normal(jax.random.key(0), (2, n_out), dtype=jnp.float64)

        def channels(p):
            return jnp.sin(p @ w)

        x = jax.random.uniform(jax.random.key(1), (4, 2), dtype=jnp.float64)
        value = jax.vmap(channels)(x)
        grad = jnp.moveaxis(jax.vmap(jax.jacfwd(channels))(x), -1, 0)
        mu, gmu = laws.get(mu_model).network(value, grad, ratio)

        def mu_at(p):
            return laws.get(mu_model).network(channels(p)[None], None, ratio)[0][0]

        ref_re = jnp.moveaxis(jax.vmap(jax.jacfwd(lambda p: mu_at(p).real))(x), -1, 0)
        ref_im = jnp.moveaxis(jax.vmap(jax.jacfwd(lambda p: mu_at(p).imag))(x), -1, 0)
        assert jnp.allclose(gmu.real, ref_re, atol=1e-12)
        assert jnp.allclose(gmu.imag, ref_im, atol=1e-12)


def test_voigt_loss_modulus_scales_with_frequency():
    ratio = jnp.array([0.5, 1.0])
    mu, _ = laws.get("voigt").network(jnp.array([[0.3, 2.0]]), None, ratio)
    assert jnp.allclose(mu.real[0, 0], mu.real[0, 1])
    assert jnp.allclose(mu.imag[0, 1], 2 * mu.imag[0, 0])


@pytest.mark.parametrize("mu_model", ["voigt", "per-frequency"])
def test_loss_modulus_is_never_negative(mu_model):
    """Passive tissue: G'' >= 0 and G' > 0 for any network output, however negative."""
    ratio = jnp.array([0.5, 1.0])
    n_out = laws.get(mu_model).channels(2)
    value = 30.0 * jax.random.normal(jax.random.key(2), (256, n_out))
    mu, _ = laws.get(mu_model).network(value, None, ratio)
    assert jnp.all(mu.imag >= 0) and jnp.all(mu.real > 0)
    assert jnp.any(mu.imag > 1.0)  # not clamped to zero: large outputs give large G''
