"""Noise-aware weighting: the noise estimator on known noise, the weights it gives, and
that a component that is only noise does not pull the modulus (while uniform weights
let it)."""

import dataclasses

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.assess import metrics, stencils
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.forward import phantoms


def _oblique_wave(voxels_per_wavelength, shape=(60, 70)):
    k = 2 * np.pi / voxels_per_wavelength
    x, y = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    return np.exp(1j * k * (np.cos(0.5) * x + np.sin(0.5) * y))[None, None]


@pytest.mark.parametrize("voxels_per_wavelength", [6, 8, 16])
def test_noise_estimate_matches_known_noise(voxels_per_wavelength):
    """Within 5 % of the true complex noise RMS at -30, -20 and -10 dB (measured 1-2 %
    low), and below 0.1 % of the field's RMS on clean waves of 6 or more voxels per
    wavelength."""
    u = _oblique_wave(voxels_per_wavelength)
    valid = np.ones(u.shape[2:], bool)
    assert stencils.noise_rms(u, valid)[0, 0] < 1e-3
    for db in (-30, -20, -10):
        est = stencils.noise_rms(phantoms.add_noise(u, db, seed=3), valid)[0, 0]
        assert est == pytest.approx(10 ** (db / 20), rel=0.05)


def test_noise_estimate_reads_only_the_mask():
    u = phantoms.add_noise(_oblique_wave(8), -20, seed=1)
    mask = np.zeros(u.shape[2:], bool)
    mask[10:40, 5:50] = True
    u_out = np.where(mask, u, 1e6)  # garbage outside the mask must not enter
    zero_filled, valid = stencils.usable(u_out, mask, mask.shape)
    assert stencils.noise_rms(zero_filled, valid)[0, 0] == pytest.approx(0.1, rel=0.08)


def _with_third(data, third):
    return dataclasses.replace(data, u=np.concatenate([data.u, third], axis=1))


def test_weights_silence_noise_only_and_numerically_zero_components():
    data = plane_wave_dataset(n=24)
    rng = np.random.default_rng(0)
    shape = data.u[:, :1].shape
    noise = 0.1 * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / np.sqrt(2)
    cfg = Config(mu_model="voigt")
    prep = prepare_one(_with_third(data, noise), cfg)
    w_noise, rms = prep.problem.weight, prep.u_scale
    w_tiny = prepare_one(_with_third(data, 1e-14 * data.u[:, :1]), cfg).problem.weight
    w_zero = prepare_one(_with_third(data, 0 * data.u[:, :1]), cfg)
    # clean components sit at the noise floor (a fraction of the strongest RMS), so they
    # weigh by their power; the noise-only one (n ~ 1) weighs ~floor^2 = 1e-3
    power = (rms[:, :2] / rms[:, :2].max(axis=1, keepdims=True)) ** 2
    np.testing.assert_allclose(w_noise[:, :2], power, rtol=1e-5)
    assert np.all(w_noise[:, 2] < 0.02)
    assert np.all(w_tiny[:, 2] < 1e-20)  # clean but 1e-14 of the others: the floor decides
    assert np.all(w_zero.problem.weight[:, 2] == 0) and np.all(np.isfinite(w_zero.problem.u))
    uniform = prepare_one(_with_third(data, noise), cfg.replace(weighting="uniform"))
    assert np.all(uniform.problem.weight == 1)


def test_a_frequency_without_signal_is_refused():
    data = plane_wave_dataset(n=16)
    dead = dataclasses.replace(data, u=data.u * np.array([1.0, 0.0])[:, None, None, None])
    with pytest.raises(InputError, match="zero in the mask for every component at \\[90.0\\]"):
        prepare_one(dead, Config(mu_model="voigt"))


def test_a_noise_only_component_does_not_pull_the_modulus():
    """-20 dB plane waves (2 components, 3 kPa) plus a third component of pure noise at
    the same absolute level. Noise weighting: the 3-component fit is within 3 points of
    the 2-component one (measured 8.0 % and 9.1 % median error of G'). Uniform weights:
    the noise component drags G' towards zero (measured 97 % error)."""
    data = dataclasses.replace(
        plane_wave_dataset(n=24, freqs=(120.0,)),
        u=phantoms.add_noise(plane_wave_dataset(n=24, freqs=(120.0,)).u, -20, 1),
    )
    rng = np.random.default_rng(5)
    sigma = 0.1 * np.sqrt(np.mean(np.abs(data.u) ** 2) / 2)
    shape = data.u[:, :1].shape
    noise = sigma * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    three = _with_third(data, noise)
    cfg = Config(
        width=32, depth=2, mu_width=16, mu_depth=1, n_features=16, batch_size=576,
        steps=1500, sync_interval=100, pde_warmup=100, pde="hetero", mu_ref=3000.0,
    )  # fmt: skip

    def error(dataset, **kw):
        res = inversion.invert(dataset, cfg, progress=False, **kw)
        return metrics.evaluate(res.mu, dataset)["median_rel_error_storage"]

    two, weighted = error(data), error(three)
    assert two < 0.15
    assert weighted < two + 0.03
    assert error(three, weighting="uniform") > 0.5


def test_the_noise_and_the_wavelength_are_one_pass_per_dataset(monkeypatch):
    """The plan and the fit checks ask the same Dataset for its noise and wavelength: the
    second ask reads the first answer (read-only), a new Dataset is measured afresh."""
    from helmholtz_pinn.assess import wavelength

    passes = []
    real = stencils.noise_rms
    monkeypatch.setattr(stencils, "noise_rms", lambda *a: passes.append(1) or real(*a))
    data = plane_wave_dataset(n=12)
    first = stencils.field_noise(data)
    assert stencils.field_noise(data) is first and not first.flags.writeable
    lam = wavelength.estimate_dataset(data)
    assert wavelength.estimate_dataset(data) is lam and len(passes) == 2
    other = dataclasses.replace(data, u=2 * data.u)
    np.testing.assert_allclose(stencils.field_noise(other), 2 * first, rtol=1e-6, atol=1e-12)
    assert len(passes) == 3
