"""Batched and slicewise inversion; the 3-D network and residual behind whole-volume fits.

Tolerances: a batched member runs the same math as its own fit, but XLA evaluates the
vmapped (batched) matmuls with other kernels, so results agree to float32 rounding
amplified over 10 Adam steps (measured ~2e-7 relative; asserted 2e-5).
"""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DatasetError, InputError
from helmholtz_pinn.fit import defaults, inversion
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.plan import program
from helmholtz_pinn.io.dataset import Dataset, z_slices
from helmholtz_pinn.laws._channels import SOFTPLUS_ONE
from helmholtz_pinn.pinn import forms, scaling, train
from helmholtz_pinn.pinn.model import FourierMLP, apply_jet
from helmholtz_pinn.pinn.problem import estimate_reference, wave_cycles

N, H, FREQS = 12, 1.5e-3, (60.0, 90.0)
RTOL = 2e-5


def wave(direction, mu_pa, shape):
    """exp(i k n.x) per frequency on a grid of spacing H, k^2 = rho omega^2 / mu (Voigt)."""
    axes = np.meshgrid(*[np.arange(n) * H for n in shape], indexing="ij")
    nx = sum(d * a for d, a in zip(direction, axes, strict=True))
    return np.array(
        [
            [np.exp(1j * np.sqrt(1000 * (2 * np.pi * f) ** 2 / m) * nx)]
            for f, m in zip(FREQS, mu_pa, strict=True)
        ]
    )


def wave_slice(theta, g=3000.0, mask=None):
    mu = g + 1j * 2 * np.pi * np.asarray(FREQS)
    u = wave((np.cos(theta), np.sin(theta)), mu, (N, N))
    return Dataset(
        u=u,
        frequency=np.asarray(FREQS),
        spacing=np.array([H, H]),
        mask=mask,
        mu=mu[:, None, None] * np.ones((1, N, N)),
    )


@pytest.fixture(scope="module")
def slices():
    """Four slices of different direction and modulus; the second masked (rows padded)."""
    mask = np.ones((N, N), bool)
    mask[:3] = False
    return [
        wave_slice(0.3),
        wave_slice(1.0, 4000.0, mask),
        wave_slice(2.0, 2500.0),
        wave_slice(2.5),
    ]


# The members of a batch share one program and so one u factor, the smallest of their
# data-derived ones (these slices: 0.5 at 12-13 voxels per wavelength, 1.0 at 14.8); it is
# given here so that each member's own fit has the batch's.
BATCH = Config(**SMALL, sigma_factor_u=0.5)


@pytest.fixture(scope="module")
def batched(slices):
    return inversion.invert(slices, BATCH, devices=1, progress=False)


def assert_same_fit(a, b):
    np.testing.assert_allclose(a.mu, b.mu, rtol=RTOL)
    np.testing.assert_allclose(a.u_fit, b.u_fit, rtol=RTOL, atol=RTOL * np.abs(b.u_fit).max())
    assert a.history[-1]["loss"] == pytest.approx(b.history[-1]["loss"], rel=RTOL)
    assert a.metrics["steps"] == b.metrics["steps"]


def test_batched_run_equals_separate_runs(slices, batched):
    separate = [inversion.invert(d, BATCH, progress=False) for d in slices]
    for one, many in zip(separate, batched, strict=True):
        assert_same_fit(many, one)
        assert many.mu.shape == (2, N, N) and many.metrics["batch_members"] == 4
        assert isinstance(many.history[-1]["loss"], float)  # per-member history
    # the members fit different waves: the comparison is not between four copies
    assert np.max(np.abs(batched[0].u_fit - batched[2].u_fit)) > 0.1


def test_sharded_batched_run_equals_single_device(slices, batched, four_devices):
    sharded = inversion.invert(slices, BATCH, devices=4, progress=False)
    for a, b in zip(sharded, batched, strict=True):
        assert a.metrics["devices"] == 4
        assert_same_fit(a, b)
    # 3 members on 4 devices: padded with a copy, which is dropped again
    three = inversion.invert(slices[:3], BATCH, devices=4, progress=False)
    assert len(three) == 3 and len(three[0].history[-1]) == len(batched[0].history[-1])
    for a, b in zip(three, batched[:3], strict=True):
        assert_same_fit(a, b)


def test_invert_many_refuses_mixed_grids(slices):
    other = Dataset(
        u=np.ones((2, 1, N, N + 1), complex), frequency=np.asarray(FREQS), spacing=np.array([H, H])
    )
    with pytest.raises(InputError, match=r"datasets\[1\] has grid \(12, 13\)"):
        inversion.invert([slices[0], other], Config(**SMALL))
    with pytest.raises(InputError, match="non-empty list"):
        inversion.invert([], Config(**SMALL))


def shared_settings(datasets, cfg):
    """The plan's mu_ref (Pa), u factor and Fourier scales (cycles per field of view) of
    ``datasets`` fitted as one run's members."""
    mu_ref = run_plan.reference_modulus(datasets, cfg)
    factor, sigma_u, sigma_mu = run_plan.fourier_scales(datasets, cfg, mu_ref)
    return types.SimpleNamespace(
        mu_ref=mu_ref, sigma_factor_u=factor, sigma_u=sigma_u, sigma_mu=sigma_mu
    )


def test_shared_scales_use_one_mu_ref_and_the_shortest_wave(slices):
    cfg = shared_settings(slices, Config(**{**SMALL, "mu_ref": None}))
    estimates = [estimate_reference(d) for d in slices]
    assert cfg.mu_ref == pytest.approx(np.median(estimates))
    cycles = max(wave_cycles(d, cfg.mu_ref) for d in slices)
    # 2-D slices, one of them below 14 voxels per wavelength: the coarse 2-D factor for all
    assert cfg.sigma_u == pytest.approx(defaults.SIGMA_FACTOR_U_3D * cycles)


def test_a_3d_fit_gets_the_3d_fourier_factor_unless_one_is_configured(slices):
    """sigma_u = factor * L / lambda_min, factor SIGMA_FACTOR_U_3D for one 3-D fit
    (measured), the configured factor where given."""

    volume = Dataset(
        u=np.stack([d.u for d in slices], axis=-1),
        frequency=slices[0].frequency,
        spacing=np.append(slices[0].spacing, slices[0].spacing[0]),
    )
    base = Config(**{**SMALL, "mu_ref": 3000.0})
    cycles = wave_cycles(volume, 3000.0)
    auto = shared_settings([volume], base)
    assert auto.sigma_u == pytest.approx(defaults.SIGMA_FACTOR_U_3D * cycles)
    given = shared_settings([volume], base.replace(sigma_factor_u=0.6))
    assert given.sigma_u == pytest.approx(0.6 * cycles)


def test_noisy_2d_data_get_the_smoother_fourier_factor_unless_one_is_configured(slices):
    """These slices sample the wavelength with about 13 voxels, below the tuned region:
    noisy, they get the factor of fit.defaults.sigma_factor_u (0.1 at -20 dB, 0.05 at
    -10 dB, where a factor of 0.5-1 collapsed the map); clean ones the coarse 2-D factor
    0.5 (1.0 at 14 voxels and more); a configured
    factor or sigma_u wins; one noisy slice of a batch decides for all (they share one
    program); a fit's metrics record the factor, the rule that set it and a note."""
    from helmholtz_pinn.fit import defaults
    from helmholtz_pinn.forward import phantoms
    from helmholtz_pinn.pinn import problem

    def noisy(d, db):
        return dataclasses.replace(d, u=phantoms.add_noise(d.u, db, 0))

    base = Config(**{**SMALL, "mu_ref": 3000.0})
    cycles = wave_cycles(slices[0], 3000.0)
    assert problem.best_noise(slices[0]) < 0.01
    assert 0.25 < problem.best_noise(noisy(slices[0], -10.0)) < 0.35  # 10^(-10/20) = 0.32
    for data, factor in [
        ([slices[0]], defaults.SIGMA_FACTOR_U_3D),
        ([noisy(slices[0], -20.0)], defaults.NOISY_FACTOR_U),
        ([noisy(slices[0], -10.0)], defaults.NOISIER_FACTOR_U),
        ([slices[0], noisy(slices[1], -10.0)], defaults.NOISIER_FACTOR_U),
    ]:
        cfg = shared_settings(data, base)
        assert cfg.sigma_factor_u == factor
        assert cfg.sigma_u == pytest.approx(factor * cycles)
    loud = [noisy(slices[0], -10.0)]
    assert shared_settings(loud, base.replace(sigma_factor_u=0.8)).sigma_u == (
        pytest.approx(0.8 * cycles)
    )
    assert shared_settings(loud, base.replace(sigma_u=7.0)).sigma_u == 7.0
    res = inversion.invert(loud[0], base, progress=False)  # what metrics.json says
    assert res.metrics["sigma_factor_u"] == defaults.NOISIER_FACTOR_U
    assert "voxels per wavelength (< 14)" in res.metrics["plan"]["sigma_factor_u_rule"]
    assert any("sigma_factor_u=0.05, not 1" in n for n in res.metrics["notes"])


def test_invert_slicewise_writes_mu_on_the_volume_grid(tmp_path, four_devices):
    """5 z-slices, slice 2 without mask: 4 fits (as many as devices, so sharded)."""
    nz = 5
    mu = 3000.0 + 1j * 2 * np.pi * np.asarray(FREQS)
    u = wave((0.48, 0.6, 0.64), mu, (N, N, nz))
    mask = np.ones((N, N, nz), bool)
    mask[..., 2] = False
    volume = Dataset(
        u=u,
        frequency=np.asarray(FREQS),
        spacing=np.array([H, H, 2 * H]),
        mask=mask,
        mu=mu[:, None, None, None] * np.ones((1, N, N, nz)),
    )
    result = inversion.invert(volume, Config(**SMALL), slicewise=True, progress=False)
    assert result.metrics["slices_skipped"] == [2]
    assert result.metrics["slices_fitted"] == [0, 1, 3, 4]
    assert result.metrics["devices"] == 4
    result.save(tmp_path)
    saved = np.load(tmp_path / "mu.npz")["mu"]
    assert saved.shape == (2, N, N, nz)
    assert np.isnan(saved[..., 2]).all() and np.isfinite(saved[..., [0, 1, 3, 4]]).all()
    assert result.u_fit.shape == volume.u.shape
    assert "median_rel_error_storage" in result.metrics  # scored on the volume's mask


def test_slice_datasets_needs_a_volume(slices):
    with pytest.raises(DatasetError, match="needs a 3-D dataset"):
        z_slices(slices[0])


# --- whole-volume (3-D) inversion: jets and residual in three dimensions ---------------


def test_3d_jet_laplacian_equals_hessian_trace():
    with jax.enable_x64(True):
        net = FourierMLP(3, 4, width=8, depth=2, n_features=4, sigma=1.5, activation="tanh")
        x = jax.random.uniform(jax.random.key(0), (20, 3), dtype=jnp.float64)
        variables = jax.jit(net.init)(jax.random.key(1), x)
        assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(variables))
        stack = jax.jit(lambda x: net.apply(variables, x, order=2))(x)
        assert stack.shape == (5, 20, 4)  # value, 3 gradient rows, Laplacian

        def point(p):
            return net.apply(variables, p[None])[0, 0]

        ref = jax.jit(lambda x: scaling.laplacian_reference(point, x))(x)
        np.testing.assert_allclose(stack[4], ref, rtol=1e-10, atol=1e-10)
        grad = jax.jit(jax.vmap(jax.jacfwd(point)))(x)
        np.testing.assert_allclose(stack[1:4], np.moveaxis(grad, -1, 0), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pde", ["helmholtz", "hetero"])
def test_3d_plane_wave_residual_vanishes(pde):
    """A plane wave exp(i k n.x) in 3-D, k^2 = rho omega^2 / mu, has zero residual, both
    analytically (complex Voigt mu) and through the network path: a depth-0 Fourier
    network whose one feature is the wave vector represents the wave exactly."""
    f, length, mu_ref = 80.0, 0.05, 2500.0
    n = np.array([0.48, 0.6, 0.64])
    x = np.random.default_rng(0).uniform(size=(30, 3))
    scales = scaling.make_scales(np.array([f]), length, mu_ref, 1000.0)
    # analytic fields, complex modulus (3000 + i omega 1 Pa s)
    mu_pa = 3000.0 + 1j * 2 * np.pi * f
    kn = np.sqrt(1000.0 * (2 * np.pi * f) ** 2 / mu_pa) * length * n
    u = np.exp(1j * x @ kn)[:, None, None]
    lap = -(kn @ kn) * u
    grad = (1j * kn[:, None] * u[None, :, 0, 0])[..., None, None]
    mu = np.full((30, 1), mu_pa / mu_ref)
    kappa = jnp.asarray(scales.kappa)
    form = forms.get(pde)
    zero = np.zeros((3, 30, 1))
    r = form.residual(forms.Fields(u, grad, lap, None, mu, zero), kappa)
    assert np.max(np.abs(r)) < 1e-5
    wrong = form.residual(forms.Fields(u, grad, lap, None, 1.1 * mu, zero), kappa)
    assert np.max(np.abs(wrong)) > 0.05
    # the network path: u-net channels (Re, Im) = (cos z, sin z), z = kn.x; constant mu
    with jax.enable_x64(True):
        g = 3000.0 / mu_ref
        kn = np.sqrt(1000.0 * (2 * np.pi * f) ** 2 / 3000.0) * length * n
        consts = {"u": {"B": kn[:, None] / (2 * np.pi)}, "mu": {"B": np.zeros((3, 1))}}
        params = {
            "u": {"out_kernel": np.array([[0.0, 1.0], [1.0, 0.0]]), "out_bias": np.zeros(2)},
            "mu": {
                "out_kernel": np.zeros((2, 2)),
                # G' = softplus(b0 + c) = g; G'' = 0.1 softplus(-40 + c) ~ 1e-18 (G'' >= 0)
                "out_bias": np.array([np.log(np.expm1(g)) - SOFTPLUS_ONE, -40.0]),
            },
        }
        spec = program(Config(pde=pde), 3, 1, 1)
        spec = dataclasses.replace(spec, depth=0, mu_depth=0)  # output layers only
        xs = jnp.asarray(x)
        fields = jax.jit(train.evaluate_fields, static_argnums=2)
        f = fields(params, consts, spec, xs, jnp.asarray(scales.omega_ratio))
        np.testing.assert_allclose(f.u[:, 0, 0], np.exp(1j * x @ kn), atol=1e-12)
        np.testing.assert_allclose(f.mu, g, atol=1e-12)
        r = form.residual(f, jnp.asarray(scales.kappa))
        assert np.max(np.abs(r)) < 1e-10
        assert apply_jet(params["u"], consts["u"], xs, "tanh", 2, 0).shape == (5, 30, 2)


def test_auto_judges_a_batch_by_its_worst_spread_and_a_volume_by_all_its_slices(slices):
    """mu_model auto on a batch keeps the law whose worst member spread is the lower, and
    on a slicewise volume the law of the lower spread over all its slices: the spread it
    records for the kept law is the one its Results report (neither is continued)."""
    cfg = Config(**{**SMALL, "mu_model": "auto"})
    batch = inversion.invert(slices[:2], cfg, devices=1, progress=False)
    law = batch[0].metrics["law"]
    assert law == batch[1].metrics["law"] and set(law["tried"]) == {"springpot", "voigt"}
    assert law["tried"][law["mu_model"]] == max(r.metrics["law_spread"] for r in batch)
    assert min(law["tried"].values()) == law["tried"][law["mu_model"]]
    full = [slices[i] for i in (0, 2, 3)]  # unmasked slices
    volume = dataclasses.replace(
        slices[0],
        u=np.stack([s.u for s in full], axis=-1),
        spacing=np.array([H, H, 2 * H]),
        mask=np.ones((N, N, len(full)), bool),
        mu=np.stack([s.mu for s in full], axis=-1),
    )
    result = inversion.invert(volume, cfg, slicewise=True, devices=1, progress=False)
    law = result.metrics["law"]
    assert law["tried"][law["mu_model"]] == result.metrics["law_spread"]
