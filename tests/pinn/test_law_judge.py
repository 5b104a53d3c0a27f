"""The laws judged on one fitted wave: the factors c_f read on the fixed wave equal those of
the fit itself, and a law's modulus network fitted on the wave lowers the PDE loss."""

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset, plane_wave_volume

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import dispersion, law_judge, train


def _three_components():
    """3 x 3-D plane-wave components at two frequencies, 6 x 6 x 5 voxels of 1 mm."""
    shape = (6, 6, 5)
    wave = plane_wave_volume(shape, (0.48, 0.6, 0.64))
    u = np.stack([wave, 0.5 * wave, 0.2 * wave])
    return Dataset(
        u=np.stack([u, u.conj()]),
        frequency=np.array([60.0, 90.0]),
        spacing=np.full(3, 1e-3),
        mu=np.full((2, *shape), 3000.0 + 30j),
    )


def _three_component_slice():
    """The middle slice of :func:`_three_components`: 2-D, three components."""
    volume = _three_components()
    return Dataset(
        u=volume.u[..., 2],
        frequency=volume.frequency,
        spacing=volume.spacing[:2],
        mu=volume.mu[..., 2],
    )


@pytest.mark.parametrize(
    "pde, data",
    [
        ("hetero", plane_wave_dataset),
        ("weak", plane_wave_dataset),
        ("navier", _three_components),
        ("navier", _three_component_slice),
    ],
)
def test_the_fits_own_modulus_on_its_wave_gives_its_dispersion_factors(pde, data):
    """The judge's wave (the u-network's jet, held fixed) and the fit's own mu-network give
    the c_f of :func:`dispersion.frequency_scale` on every PDE row: the same Fields (a
    pointwise form, one with patches, and the pressure of the navier form on the
    u-network (3-D) or on the mu-network (2-D))."""
    cfg = Config(**{**SMALL, "pde": pde, "pde_margin": 0})
    prep = prepare_one(data(), cfg)
    spec, problem = prep.spec, prep.problem
    state = train.init_state(spec, 3, prep.sigma_u, prep.sigma_mu, 1e-3)
    expected = dispersion.frequency_scale(state, spec, problem)
    wave = law_judge.wave_of(state, spec, problem, points=10**6)
    got = law_judge.frequency_scale(state.params["mu"], wave, spec, problem)
    assert np.all(np.isfinite(expected))
    np.testing.assert_allclose(got, expected, rtol=2e-4)


def test_a_laws_modulus_fitted_on_a_wave_lowers_its_pde_loss():
    """Adam on the mu-network alone, the wave fixed: the PDE loss of the fitted modulus is
    below a tenth of the initial network's, and the judge reports it with finite spreads."""
    prep = prepare_one(plane_wave_dataset(), Config(**{**SMALL, "pde": "helmholtz"}))
    spec, problem = prep.spec, prep.problem
    state = train.init_state(spec, 1, prep.sigma_u, prep.sigma_mu, 1e-2)
    wave = law_judge.wave_of(state, spec, problem, points=128)
    _, losses, _ = law_judge.fit_modulus(wave, spec, problem, steps=200)
    assert losses[-1] < 0.1 * losses[0]
    judged = law_judge.judge(state, spec, problem, ("springpot", "voigt"), steps=200, points=128)
    assert set(judged) == {"springpot", "voigt"}
    assert all(np.isfinite(j.spread) and j.loss > 0 for j in judged.values())
