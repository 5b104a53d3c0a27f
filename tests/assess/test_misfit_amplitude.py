"""The saved misfit map is the same at any amplitude of u: it is computed in a power of
two near u's peak, never by squaring u in the data's unit (float32 overflows at u x 1e20
and underflows at u x 1e-30)."""

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.assess.metrics import wave_misfit


@pytest.mark.parametrize("factor", [1e20, 1e-30])
def test_the_misfit_map_does_not_depend_on_the_amplitude_of_u(factor):
    d = plane_wave_dataset(n=12)
    u = d.u.astype(np.complex64)
    rng = np.random.default_rng(0)
    u_fit = (u * (1 + 0.1 * rng.standard_normal(u.shape))).astype(np.complex128)
    mask = np.ones(d.grid, bool)
    mask[0] = False
    unit = wave_misfit(u_fit, u, mask)
    scaled = wave_misfit(u_fit * factor, (u * np.complex64(factor)), mask)
    assert np.all(np.isfinite(unit[:, mask])) and np.all(np.isnan(unit[:, ~mask]))
    np.testing.assert_allclose(scaled, unit, rtol=1e-5)
    # the known answer: sqrt(sum_c |du|^2) / sqrt(mean_mask sum_c |u|^2) at one voxel
    f, x, y = 1, 5, 7
    rms = np.sqrt(np.mean(np.sum(np.abs(u[f].astype(complex)) ** 2, axis=0)[mask]))
    expected = np.sqrt(np.sum(np.abs(u_fit[f, :, x, y] - u[f, :, x, y]) ** 2)) / rms
    np.testing.assert_allclose(unit[f, x, y], expected, rtol=1e-5)
