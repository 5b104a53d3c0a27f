"""The vector forms: Navier-Cauchy vanishes on analytic elastic plane waves (shear and
compressional, slices and volumes), the curl form is blind to compressional waves, and
``pde="auto"`` and the component checks pick and refuse forms as documented."""

import dataclasses

import numpy as np
import pytest
from settings import SMALL

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.fit.plan import program
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import forms

KAPPA = np.array([400.0, 900.0])  # rho omega^2 L^2 / mu_ref per frequency
MU = 1.3 + 0.2j  # mu' (nondimensional), homogeneous
LAM = 300.0  # lambda' = lambda / mu_ref (nearly incompressible)


def _plane(k_dir, polar, k_mag, x, d):
    """u = e exp(i k.x) with derivatives, shapes (N, F, 3), (d, N, F, 3), (d, d, N, F, 3)."""
    k = np.asarray(k_dir)[None, :d] * k_mag[:, None]  # (F, d)
    phase = np.exp(1j * np.einsum("nd,fd->nf", x, k))  # (N, F)
    u = phase[..., None] * np.asarray(polar)[None, None, :]
    grad = 1j * k.T[:, None, :, None] * u[None]
    hess = -k.T[:, None, None, :, None] * k.T[None, :, None, :, None] * u[None, None]
    return u, grad, hess


def _fields(u, grad, hess, mu, aux=None, grad_aux=None, scale=None):
    n, f, _ = u.shape
    d = grad.shape[0]
    lap = sum(hess[j, j] for j in range(d))
    return forms.Fields(
        u,
        grad,
        lap,
        hess,
        np.full((n, f), mu),
        np.zeros((d, n, f)),
        aux,
        grad_aux,
        np.ones((f, 3)) if scale is None else scale,
    )


@pytest.mark.parametrize("d", [2, 3])
def test_navier_vanishes_on_plane_shear_waves(d):
    x = np.random.default_rng(0).uniform(size=(40, d))
    k_dir = np.array([0.6, 0.8, 0.0])
    k_s = np.sqrt(KAPPA / MU)
    zero_aux = np.zeros((40, 2, 1)), np.zeros((d, 40, 2, 1))
    residual = forms.get("navier").residual
    for polar in ([0.8, -0.6, 0.0], [0.0, 0.0, 1.0]):  # in-plane and through-plane shear
        u, grad, hess = _plane(k_dir, polar, k_s, x, d)
        r = residual(_fields(u, grad, hess, MU, *zero_aux), KAPPA)
        assert np.max(np.abs(r)) < 1e-9
        bad = residual(_fields(u, grad, hess, 1.1 * MU, *zero_aux), KAPPA)
        assert np.max(np.abs(bad)) > 0.05  # a 10 % wrong modulus shows


@pytest.mark.parametrize("d", [2, 3])
def test_navier_vanishes_on_plane_compressional_waves_with_their_pressure(d):
    """u = k^ exp(i k_p.x), k_p^2 = kappa / (lambda' + 2 mu'); the free pressure field is
    p' = lambda' div u', entering as a = p' / kappa. Components given in their own units
    (u'_c = U_c / scale_c) give the same zero residual."""
    x = np.random.default_rng(1).uniform(size=(40, d))
    k_dir = np.array([0.6, 0.0, 0.8]) if d == 3 else np.array([0.6, 0.8, 0.0])
    k_p = np.sqrt(KAPPA / (LAM + 2 * MU))
    u, grad, hess = _plane(k_dir, k_dir, k_p, x, d)
    div = sum(grad[j, ..., j] for j in range(d))
    aux = (LAM * div / KAPPA)[..., None]
    grad_aux = (LAM * sum(hess[:, j, ..., j] for j in range(d)) / KAPPA)[..., None]
    residual = forms.get("navier").residual
    assert np.max(np.abs(residual(_fields(u, grad, hess, MU, aux, grad_aux), KAPPA))) < 1e-9
    scale = np.array([[1.0, 0.5, 0.25], [1.0, 0.4, 0.8]])
    f = _fields(u / scale, grad / scale, hess / scale, MU, aux, grad_aux, scale)
    assert np.max(np.abs(residual(f, KAPPA))) < 1e-9
    # without its pressure the compressional wave is not a solution
    no_p = _fields(u, grad, hess, MU, 0 * aux, 0 * grad_aux)
    assert np.max(np.abs(residual(no_p, KAPPA))) > 0.1


def _wave_dataset(k_dir, polar, n=24, h=1e-3, wavelength=8e-3):
    x, y = np.meshgrid(np.arange(n) * h, np.arange(n) * h, indexing="ij")
    k = 2 * np.pi / wavelength * np.asarray(k_dir)
    phase = np.exp(1j * (k[0] * x + k[1] * y))
    u = np.asarray(polar)[None, :, None, None] * phase[None, None]
    return Dataset(u=u, frequency=np.array([80.0]), spacing=np.array([h, h])), float(
        np.linalg.norm(k)
    )


def test_curl_form_is_blind_to_compressional_waves():
    """curl of a longitudinal wave (at 30 voxels per wavelength) is below 2 % of the curl
    of a transverse wave of the same amplitude and wavelength, which comes out as k |u|
    within the central difference's sin(k h) / (k h) (1 - 0.7 %)."""
    transform = forms.get("curl").transform
    k_dir = np.array([0.6, 0.8])
    shear, k = _wave_dataset(k_dir, [0.8, -0.6, 0.5], wavelength=30e-3)
    comp, _ = _wave_dataset(k_dir, [0.6, 0.8, 0.0], wavelength=30e-3)
    q_s, q_p = transform(shear), transform(comp)
    assert q_s.mask.sum() == 22 * 22  # the outer voxel layer has no central stencil
    amp_s = np.sqrt(np.mean(np.sum(np.abs(q_s.u[0][:, q_s.mask]) ** 2, axis=0)))
    amp_p = np.sqrt(np.mean(np.sum(np.abs(q_p.u[0][:, q_p.mask]) ** 2, axis=0)))
    assert amp_s == pytest.approx(k * np.sqrt(1 + 0.25), rel=0.01)
    assert amp_p < 0.02 * amp_s


def test_each_form_carries_its_margin_spread_limit_and_lbfgs_default():
    """The per-form knobs: navier's margin (a sixth of a wavelength, 3-D only), tighter
    spread limit and L-BFGS phase; the weak form's margin its patches' half-width; the
    others none of these (docs/defaults.md)."""
    from helmholtz_pinn.pinn.forms import weak

    navier = forms.get("navier")
    assert navier.pde_margin == {3: 1 / 6} and navier.spread_max == 0.0025
    assert navier.lbfgs_default
    assert forms.get("weak").pde_margin == {2: weak.HALF_WIDTH, 3: weak.HALF_WIDTH}
    for name in ("helmholtz", "hetero", "curl", "weak"):
        form = forms.get(name)
        assert form.spread_max == 0.02 and not form.lbfgs_default, name
        assert name == "weak" or form.pde_margin == {}, name


def test_auto_picks_navier_for_three_components_and_hetero_otherwise():
    assert forms.resolve("auto", 3) == "navier"
    assert forms.resolve("auto", 2) == "hetero"
    assert forms.resolve("auto", 1) == "hetero"
    assert forms.resolve("curl", 3) == "curl"


def test_vector_forms_refuse_data_they_cannot_describe():
    with pytest.raises(ConfigError, match="needs 3 displacement components"):
        forms.get("curl").check(2, 2)
    with pytest.raises(ConfigError, match="3-D data need 3 or more components"):
        forms.get("navier").check(2, 3)
    with pytest.raises(ConfigError, match="needs 2 or 3"):
        forms.get("navier").check(1, 2)
    forms.get("navier").check(3, 2)  # a slice of 3-D motion is fine


def test_curl_transform_needs_central_stencils():
    data, _ = _wave_dataset([1.0, 0.0], [0.0, 1.0, 0.0], n=8)
    thin = dataclasses.replace(data, mask=np.eye(8, dtype=bool))
    with pytest.raises(Exception, match="central difference"):
        forms.get("curl").transform(thin)


def _volume(n_comp, nz=3, n=12):
    rng = np.random.default_rng(0)
    shape = (1, n_comp, n, n, nz)
    u = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return Dataset(u=u, frequency=np.array([80.0]), spacing=np.full(3, 1e-3))


def test_volumes_get_one_3d_fit_by_default_and_slices_on_request():
    """A 3-component volume under pde="auto" is one 3-D navier fit (no slicewise mode);
    slicewise=True fits its z-slices as a batch of 2-D fits on the volume's grid."""
    small = Config(**SMALL)
    whole = inversion.invert(_volume(3), small, progress=False)
    assert whole.metrics["pde"] == "navier" and whole.metrics.get("mode") != "slicewise"
    assert whole.mu.shape == (1, 12, 12, 3)
    sliced = inversion.invert(_volume(3), small, slicewise=True, progress=False)
    assert sliced.metrics["mode"] == "slicewise" and sliced.mu.shape == (1, 12, 12, 3)
    assert not np.allclose(sliced.mu, whole.mu)


@pytest.mark.parametrize("where", ["mu", "u"])
def test_the_pressure_comes_from_the_configured_network_with_its_gradient(where):
    """aux_network: the navier pressure p (and grad p) is read from the last 2 F channels
    of the chosen network, the displacement from the u-network's first 2 F C channels, and
    the other network carries no pressure channels; grad p equals jax.jacfwd of p."""
    import jax
    import jax.numpy as jnp

    from helmholtz_pinn import laws
    from helmholtz_pinn.pinn import scaling, train
    from helmholtz_pinn.pinn.model import VALUE, apply_jet

    n_freq, n_comp = 2, 3
    spec = program(Config(**SMALL, aux_network=where), 2, n_freq, n_comp)
    n_u, n_mu = 2 * n_freq * n_comp, laws.get("voigt").channels(n_freq)
    assert (spec.u_outputs, spec.mu_outputs) == (
        (n_u, n_mu + 2 * n_freq) if where == "mu" else (n_u + 2 * n_freq, n_mu)
    )
    state = train.init_state(spec, 0, 2.0, 1.0, 1e-3)
    x = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, (7, 2)), jnp.float32)
    f = train.evaluate_fields(state.params, state.consts, spec, x, jnp.ones(n_freq))

    def channels(net, xs):
        depth = spec.depth if net == "u" else spec.mu_depth
        return apply_jet(state.params[net], state.consts[net], xs, "tanh", VALUE, depth)[0]

    def pressure(point):  # (2,) -> (F,) real and imaginary parts of p
        out = channels(where, point[None])[0, -2 * n_freq :]
        return scaling.u_complex(out, n_freq, 1)[:, 0]

    np.testing.assert_allclose(
        f.u, scaling.u_complex(channels("u", x)[:, :n_u], n_freq, n_comp), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(f.aux[..., 0], jax.vmap(pressure)(x), rtol=1e-6, atol=1e-7)
    jac = jax.vmap(jax.jacfwd(lambda p: jnp.stack([pressure(p).real, pressure(p).imag])))(x)
    grad = jnp.moveaxis(jac[:, 0] + 1j * jac[:, 1], -1, 0)  # (d, N, F)
    np.testing.assert_allclose(f.grad_aux[..., 0], grad, rtol=1e-4, atol=1e-5)
