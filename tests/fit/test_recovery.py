"""A heterogeneous phantom is recovered: one stiff disk in a soft background.

The phantom: ``four-target`` reduced to one disk of radius 8 mm, G' = 9 kPa, centred in
a 3 kPa background of 40 x 40 voxels of 1 mm (eta = 1 Pa s everywhere), simulated by
the finite-difference solver at 80 and 120 Hz with two drive directions (background
wavelength 22 and 14 mm, disk 38 and 25 mm). Fitted by ``invert`` with the default PDE
form for two components ("hetero", div(mu grad u) + rho omega^2 u = 0) and the small
networks and 1500 steps below (about 13 s on this project's 2-core CPU).

Measured with these settings (seeds 0, 1, 2): median relative error of G' 3.8 / 4.4 /
4.8 % in the background and 8.4 / 12.5 / 9.9 % in the disk; recovered contrast median
G'(disk) / median G'(background) 2.87 / 2.68 / 2.76 against the true 3 (the disk's edge
is smoothed by the mu-network, so the disk reads low). At 2000 steps: 3.2-3.9 %,
8.4-10.3 % and 2.72-2.87; at 1000 steps the disk reached 18.6 % (seed 1), too close to
its bound. Tolerances, 1.6 to 2.4 times the background and the disk errors so that a
change of the modulus parameterisation or of the schedule does not fail it while a fit
that misses the disk does: background < 8 %, disk < 20 %, contrast within 20 % of 3 (an
unresolved disk gives a contrast near 1 and a disk error near 67 %).
"""

import numpy as np
import pytest

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.forward.phantoms import simulate_phantom

BACKGROUND, TARGET = 3e3, 9e3  # Pa
FIT = Config(
    **dict(width=48, depth=2, mu_width=16, mu_depth=1, n_features=32, batch_size=512),
    **dict(steps=1500, sync_interval=100, pde_warmup=300, learning_rate=3e-3),
    # the phantom's law (Voigt, eta = 1 Pa s): one fit. mu_model="auto" fits both laws,
    # keeps Voigt here and returns the same map bit for bit at twice the cost; the law
    # choice is tested in tests/fit/test_joint.py and tests/assess/test_laws.py
    mu_model="voigt",
)


@pytest.fixture(scope="module")
def disk():
    return simulate_phantom(
        "four-target",
        shape=(40, 40),
        radii=(8e-3,),
        centres=((0.5, 0.5),),
        background=BACKGROUND,
        target=TARGET,
        frequencies=(80.0, 120.0),
        components=2,
    )


def test_stiff_disk_is_recovered(disk):
    result = inversion.invert(disk, FIT, progress=False)
    g = result.storage_modulus  # Pa
    error = np.abs(g - disk.mu[0].real) / disk.mu[0].real
    background, inside = disk.regions == 1, disk.regions == 2
    assert inside.sum() > 150  # the disk: ~200 voxels of 1 mm
    assert np.median(error[background]) < 0.08
    assert np.median(error[inside]) < 0.20
    contrast = np.median(g[inside]) / np.median(g[background])
    assert contrast == pytest.approx(TARGET / BACKGROUND, rel=0.2)


def test_a_3d_fit_with_the_3d_fourier_factor_is_not_biased_low():
    """Two plane shear waves per frequency along the xy-plane of a 24 x 24 x 6 volume of
    1 mm (3 kPa, 60 and 90 Hz; exact, z-invariant): one 3-D hetero fit of 600 steps with
    each factor (the fewest past the plateau schedule's patience of 5 blocks). Measured
    (seeds 0-2, CPU): with the 3-D defaults (factor 0.5, through-plane ratio 0.25)
    median G' 2897-2923 Pa, median error 5.2-6.2 %; with the isotropic 2-D factor 1.0,
    median error 39-47 % (at 1000 steps: 2919-2946 Pa and 3.3-4.0 % against 28-37 %; at
    1500 steps: 2929-2943 Pa and 3.0-3.2 % against 2410-2609 Pa, 13-20 % low, and
    21-28 %). Bounds: default median within 10 %, error < 15 % and under half the 2-D
    factor's error."""
    from helmholtz_pinn.io.dataset import Dataset

    h, n, nz, g = 1e-3, 24, 6, BACKGROUND
    x, y, _ = np.meshgrid(*(np.arange(m) * h for m in (n, n, nz)), indexing="ij")
    freqs = np.array([60.0, 90.0])
    k = 2 * np.pi * freqs * np.sqrt(1000 / g)
    u = [[np.exp(1j * q * (0.8 * x + 0.6 * y)), np.exp(1j * q * (-0.6 * x + 0.8 * y))] for q in k]
    data = Dataset(u=np.array(u), frequency=freqs, spacing=np.full(3, h), mu=np.full(x.shape, g))
    cfg = FIT.replace(steps=600, pde="hetero", mu_model="per-frequency", mu_width=8)
    default = inversion.invert(data, cfg, progress=False, devices=1)
    planar_cfg = cfg.replace(sigma_factor_u=1.0, sigma_ratio_z=1.0)
    planar = inversion.invert(data, planar_cfg, progress=False, devices=1)
    assert np.median(default.mu.real) == pytest.approx(g, rel=0.10)
    error = default.metrics["median_rel_error_storage"]
    assert error < 0.15 and error < 0.5 * planar.metrics["median_rel_error_storage"]
