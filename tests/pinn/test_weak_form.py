"""The weak form: its test fields are divergence-free and vanish on the patch boundary, it
vanishes on analytic elastic shear waves up to a quadrature error that shrinks with the
patch and the order, it is blind to compressional waves (the strong Navier form without
its pressure is not), a wrong modulus shows, and a fit with it runs end to end."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import inversion, memory, placement
from helmholtz_pinn.fit.plan import prepare_one, program
from helmholtz_pinn.pinn import dispersion, forms, train
from helmholtz_pinn.pinn.forms import weak
from helmholtz_pinn.pinn.model import GRAD, VALUE, jet_rows

KAPPA = np.array([400.0, 900.0])  # rho omega^2 L^2 / mu_ref per frequency
MU = 1.3 + 0.2j  # mu' (nondimensional), homogeneous and viscoelastic


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def patch_fields(d, n_comp, direction, polar, k_mag, mu, quad, wavelengths=weak.HALF_WIDTH):
    """Fields of u = polar exp(i k direction . x) (k (F,)) at the quadrature points of 20
    patches; centres within 0.1 of the origin (|u| ~ 1 for a complex k)."""
    centres = 0.1 * np.random.default_rng(0).uniform(size=(20, d))
    x = centres[:, None, :] + float(weak.half_width(KAPPA, wavelengths)) * quad.offsets[None]
    k = np.asarray(direction)[None, :d] * np.asarray(k_mag)[:, None]  # (F, d)
    phase = np.exp(1j * np.einsum("nqd,fd->nqf", x, k))  # (N, Q, F)
    u = phase[..., None] * np.asarray(polar)[None, None, None, :n_comp]
    grad = 1j * k.T[:, None, None, :, None] * u[None]
    mu_field = np.full(phase.shape, mu)
    return forms.Fields(u, grad, None, None, mu_field, None, scale=np.ones((2, n_comp)))


def residual(fields, quad=None, wavelengths=weak.HALF_WIDTH):
    d = fields.grad_u.shape[0]
    quad = weak.stencil(d) if quad is None else quad
    return np.asarray(weak.patch_residual(fields, KAPPA, quad, wavelengths))


# (d, C, direction of travel, polarisation): volumes, slices without and with u_z
SHEAR = {
    "volume": (3, 3, unit([0.48, 0.6, 0.64]), unit(np.cross([0.48, 0.6, 0.64], [0, 0, 1]))),
    "volume-x": (3, 3, unit([1, 0, 0]), unit([0, 0.6, 0.8])),
    "slice": (2, 2, unit([0.6, 0.8, 0]), unit([0.8, -0.6, 0])),
    "slice-uz": (2, 3, unit([0, 1, 0]), unit([0.6, 0, 0.8])),
    "slice-through": (2, 3, unit([0.6, 0.8, 0]), unit([0, 0, 1])),
}


@pytest.mark.parametrize("d, n_comp", [(3, 3), (2, 2), (2, 3)])
def test_the_test_fields_are_divergence_free_and_vanish_on_the_patch_boundary(d, n_comp):
    """div v = 0 everywhere (d_z = 0 on slices); v is 0 on a face of the patch (all the
    integration by parts needs); the closed-form Jacobian matches central differences."""
    s = np.random.default_rng(1).uniform(-0.9, 0.9, (30, d))
    v, jac = weak.v_fields(s, n_comp)
    assert v.shape == (30, n_comp, n_comp) and jac.shape == (30, n_comp, n_comp, n_comp)
    assert np.max(np.abs(np.trace(jac, axis1=-2, axis2=-1))) < 1e-12
    assert np.max(np.abs(v)) > 0.1
    face = s.copy()
    face[:, 0] = 1.0
    assert np.max(np.abs(weak.v_fields(face, n_comp)[0])) < 1e-12
    for m in range(d):
        step = 1e-6 * np.eye(d)[m]
        fd = (weak.v_fields(s + step, n_comp)[0] - weak.v_fields(s - step, n_comp)[0]) / 2e-6
        np.testing.assert_allclose(fd, jac[..., m], atol=1e-8)


@pytest.mark.parametrize("d, n_comp", [(3, 3), (2, 2), (2, 3)])
def test_a_constant_strain_and_a_constant_field_give_exactly_zero(d, n_comp):
    """The quadrature integrates v and grad v exactly: integral eps(v) = 0 (v vanishes on
    the boundary), so any constant gradient in a constant mu leaves only rounding; and
    integral v = 0 for the curl fields, so a constant u leaves nothing in their rows (the
    through-plane row of a slice is the scalar form: there a constant u_z is no solution)."""
    quad = weak.stencil(d)
    rng = np.random.default_rng(2)
    n, q = 5, len(quad.weights)
    u = np.broadcast_to(rng.standard_normal((n, 1, 2, n_comp)), (n, q, 2, n_comp))
    grad = np.broadcast_to(rng.standard_normal((d, n, 1, 2, n_comp)), (d, n, q, 2, n_comp))
    mu = np.full((n, q, 2), MU)
    f = forms.Fields(0 * u, grad, None, None, mu, None, scale=np.ones((2, n_comp)))
    curl_rows = 3 if d == 3 else 2
    with jax.enable_x64(True):
        assert np.max(np.abs(residual(f))) < 1e-10
        constant = residual(f._replace(u=u, grad_u=0 * grad))
        assert np.max(np.abs(constant[..., :curl_rows])) < 1e-10


@pytest.mark.parametrize("case", list(SHEAR))
@pytest.mark.parametrize("mu", [MU, 0.6 + 0.1j])
def test_shear_plane_waves_leave_only_the_quadrature_error(case, mu):
    """k^2 = kappa / mu (complex mu: damped waves). At the default patch (h = 1/12 of the
    shortest wavelength, mu' = 1) the residual is the quadrature error: below 0.05 (a 10 %
    wrong modulus gives ~0.1, the check at the end); it shrinks ~4x when h is halved (the
    error falls as h^2), and with q + 1 points per axis by 10x or more. Measured (this
    test's waves): max |r| 2e-5..4e-2, the largest for a wave along a grid axis in a soft
    (mu' = 0.6) volume; the modulus that fits the patches best is off by at most 1.9 %."""
    d, n_comp, direction, polar = SHEAR[case]
    k = np.sqrt(KAPPA / mu)
    quad = weak.stencil(d)
    order = weak.ORDER[d]
    with jax.enable_x64(True):
        r = residual(patch_fields(d, n_comp, direction, polar, k, mu, quad))
        assert np.max(np.abs(r)) < 0.05
        small = weak.HALF_WIDTH / 2
        r_half = residual(
            patch_fields(d, n_comp, direction, polar, k, mu, quad, small), quad, small
        )
        assert np.max(np.abs(r_half)) < np.max(np.abs(r)) / 3.5
        finer = weak.gauss(d, order + 1)
        r_fine = residual(patch_fields(d, n_comp, direction, polar, k, mu, finer), finer)
        assert np.max(np.abs(r_fine)) < np.max(np.abs(r)) / 10
        # the modulus the patches prefer: c minimising |r(c mu)|^2 (r is affine in mu)
        inertia = residual(patch_fields(d, n_comp, direction, polar, k, 0.0, quad))
        stiff = r - inertia
        c = -np.sum(np.conj(stiff) * inertia) / np.sum(np.abs(stiff) ** 2)
        assert abs(c - 1) < 0.02
        wrong = residual(patch_fields(d, n_comp, direction, polar, k, 1.1 * mu, quad))
        assert np.sqrt(np.mean(np.abs(wrong) ** 2)) > 0.05


@pytest.mark.parametrize("case", ["volume", "slice", "slice-through"])
def test_a_wrong_modulus_leaves_its_share_of_the_inertia_term(case):
    """r(c mu) = r(mu) + (1 - c) B with B the inertia term (r at mu = 0): 1.3 mu leaves
    -0.3 B, and B is O(|u|) in every row the wave drives (the normalisation N_v: a unit
    shear wave at the reference wavenumber has an inertia term of RMS 1 over directions).
    Components in their own units give the same residual, row k divided by its scale."""
    d, n_comp, direction, polar = SHEAR[case]
    k, quad = np.sqrt(KAPPA / MU), weak.stencil(d)
    with jax.enable_x64(True):
        inertia = residual(patch_fields(d, n_comp, direction, polar, k, 0.0, quad))
        wrong = residual(patch_fields(d, n_comp, direction, polar, k, 1.3 * MU, quad))
        np.testing.assert_allclose(wrong, -0.3 * inertia, atol=0.02)
        rms = np.sqrt(np.mean(np.abs(inertia) ** 2, axis=(0, 1)))
        driven = rms > 1e-6  # the through-plane wave drives only the u_z row
        assert np.all((rms[driven] > 0.3) & (rms[driven] < 2.0)), rms
        scale = np.array([[1.0, 0.5, 0.25], [1.0, 0.4, 0.8]])[:, :n_comp]
        f = patch_fields(d, n_comp, direction, polar, k, 1.3 * MU, quad)
        own = f._replace(u=f.u / scale, grad_u=f.grad_u / scale, scale=scale)
        np.testing.assert_allclose(residual(own) * scale[None], wrong, atol=1e-9)


@pytest.mark.parametrize("d, n_comp", [(3, 3), (2, 2), (2, 3)])
def test_the_weak_form_is_blind_to_compressional_waves_the_pressure_free_navier_form_sees(
    d, n_comp
):
    """u = grad phi, a plane P-wave k^ exp(i k_p k^ . x), of any k_p: div(mu (grad u +
    grad u^T)) and rho omega^2 u are gradients, so against div v = 0 the weak residual
    is zero up to the quadrature (a long wave, k_p = k_s / 20: < 1e-3; k_p = k_s: the
    shear waves' quadrature error). The strong navier form without its pressure is not
    zero: the P-wave needs p."""
    direction = unit([0.6, 0.0, 0.8]) if d == 3 else unit([0.6, 0.8, 0.0])
    k_s = np.sqrt(KAPPA / MU)
    quad = weak.stencil(d)
    with jax.enable_x64(True):
        for ratio, tol in ((1 / 20, 1e-3), (1.0, 0.05)):
            f = patch_fields(d, n_comp, direction, direction, ratio * k_s, MU, quad)
            assert np.max(np.abs(residual(f))) < tol
    centre = f._replace(u=f.u[:, 0], grad_u=f.grad_u[:, :, 0], mu=f.mu[:, 0])
    k = direction[None, :d] * (ratio * k_s)[:, None]
    hess = 1j * k.T[:, None, None, :, None] * centre.grad_u[None]
    strong = centre._replace(
        lap_u=sum(hess[j, j] for j in range(d)),
        hess_u=hess,
        grad_mu=np.zeros((d, 20, 2)),
        grad_aux=np.zeros((d, 20, 2, 1)),
    )
    assert np.max(np.abs(forms.get("navier").residual(strong, KAPPA))) > 0.5


def test_the_form_reads_grad_u_and_mu_only_at_the_points_of_its_patches():
    """Spec: grad u on the u-network, values on the mu-network, no pressure channels, Q
    points per voxel (17 in 2-D: 4 x 4 and the centre; 27 in 3-D); patch_points puts the
    centre first and evaluate_fields on patches equals it on the flattened points. A
    pointwise form's points are the batch itself."""
    spec = program(Config(**SMALL, pde="weak"), 2, 1, 3)
    assert (spec.u_order, spec.mu_order, spec.aux_channels) == (GRAD, VALUE, 0)
    assert spec.patch_size == 17 and program(Config(**SMALL, pde="weak"), 3, 1, 3).patch_size == 27
    x = jnp.asarray(np.random.default_rng(3).uniform(size=(6, 2)), jnp.float32)
    kappa = jnp.asarray(KAPPA, jnp.float32)
    points = train.patch_points(spec, x, kappa)
    assert points.shape == (6, 17, 2)
    np.testing.assert_array_equal(points[:, 0], x)
    offsets = float(weak.half_width(KAPPA)) * weak.stencil(2).offsets
    np.testing.assert_allclose(
        points - x[:, None], np.broadcast_to(offsets, points.shape), atol=1e-6
    )
    state = train.init_state(spec, 0, 2.0, 1.0, 1e-3)
    ratio = jnp.ones(1)
    f = train.evaluate_fields(state.params, state.consts, spec, points, ratio)
    flat = train.evaluate_fields(state.params, state.consts, spec, points.reshape(-1, 2), ratio)
    assert f.u.shape == (6, 17, 1, 3) and f.grad_u.shape == (2, 6, 17, 1, 3)
    assert f.mu.shape == (6, 17, 1) and f.lap_u is None and f.aux is None
    np.testing.assert_array_equal(f.grad_u, flat.grad_u.reshape(2, 6, 17, 1, 3))
    hetero = program(Config(**SMALL, pde="hetero"), 2, 1, 1)
    assert train.patch_points(hetero, x, kappa) is x and hetero.patch_size == 1


def test_member_bytes_counts_every_point_of_a_patch():
    spec = program(Config(**SMALL, pde="weak"), 2, 1, 3)
    rows = 10_000
    more = dataclasses.replace(spec, batch_size=2 * spec.batch_size)
    hidden = spec.width * spec.depth + spec.mu_width * spec.mu_depth
    step = spec.batch_size * 17 * hidden * jet_rows(2, GRAD) * 4 * 3
    assert memory.member_bytes(more, rows) - memory.member_bytes(spec, rows) == step


def _three_components(freqs=(60.0,)):
    data = plane_wave_dataset(freqs=freqs)
    u = np.concatenate([data.u, 0.3 * data.u[:, :1]], axis=1)  # u_z: a weak third component
    return dataclasses.replace(data, u=u)


@pytest.mark.filterwarnings("ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning")
def test_a_tiny_weak_fit_runs_end_to_end_with_finite_maps():
    """A 3-component 16 x 16 slice through invert(): finite modulus; the default PDE margin
    is the patch half-width (1.6 voxels here, rounded to 2), so 12 x 12 of the 16 x 16
    rows keep a residual."""
    result = inversion.invert(_three_components(), Config(**SMALL, pde="weak"), progress=False)
    assert result.metrics["pde"] == "weak"
    assert result.mu.shape == (1, 16, 16) and np.all(np.isfinite(result.mu))
    assert result.metrics["pde_fraction"] == pytest.approx(144 / 256)


def test_scan_block_equals_single_steps_for_the_weak_form():
    prep = prepare_one(_three_components(), Config(**SMALL, pde="weak"))
    state0 = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)
    one = placement.Placement(tuple(jax.devices()[:1]), 0, False)
    blocked, losses = placement.compile_block(prep.spec, 5, one)(state0, prep.problem)
    step = jax.jit(train.train_step, static_argnums=2)
    state, single = state0, []
    for _ in range(5):
        state, loss = step(state, prep.problem, prep.spec)
        single.append(loss)
    np.testing.assert_allclose(np.asarray(losses), np.stack(single), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(blocked.params), jax.tree.leaves(state.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(losses)[:, 2] > 0)  # the PDE term is there


def test_the_command_line_offers_the_weak_form():
    from helmholtz_pinn.cli.parser import build_parser

    assert "weak" in forms.names()
    action = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    pde = next(a for a in action.choices["invert"]._actions if "--pde" in a.option_strings)
    assert "weak" in pde.choices


def test_the_law_check_reads_the_patches():
    prep = prepare_one(_three_components((60.0, 90.0)), Config(**SMALL, pde="weak"))
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3)
    assert np.all(np.isfinite(dispersion.frequency_scale(state, prep.spec, prep.problem)))
