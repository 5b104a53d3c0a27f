"""Shared tiny inversion settings for fast CPU tests (a few seconds per fit), and
small analytic datasets."""

import numpy as np

from helmholtz_pinn.io.dataset import Dataset

SMALL = dict(
    width=16,
    depth=2,
    mu_width=8,
    mu_depth=1,
    n_features=8,
    batch_size=64,
    sync_interval=5,
    steps=10,
    pde_warmup=3,
    mu_ref=3000.0,
    mu_model="voigt",  # one fit: auto would fit a second law (tests/fit/test_joint.py tests auto)
)


def plane_wave_dataset(n=16, h=1e-3, freqs=(60.0, 90.0), g=3000.0, eta=1.0):
    """Two plane waves per frequency in a homogeneous Voigt medium (exact solution)."""
    freqs = np.asarray(freqs)
    mu = g + 1j * 2 * np.pi * freqs * eta
    x = np.arange(n)[:, None] * h
    y = np.arange(n)[None, :] * h
    u = []
    for f, m in zip(freqs, mu, strict=True):
        k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / m)
        u.append([np.exp(1j * k * (0.8 * x + 0.6 * y)), np.exp(1j * k * (-0.6 * x + 0.8 * y))])
    return Dataset(
        u=np.array(u),
        frequency=freqs,
        spacing=np.array([h, h]),
        mask=np.ones((n, n), bool),
        mu=mu[:, None, None] * np.ones((1, n, n)),
    )


def plane_wave_slices(n=12, gs=(2500.0, 3000.0, 3500.0)):
    """A 3-D dataset whose z-slices are the plane waves of :func:`plane_wave_dataset` in
    media of storage moduli ``gs`` (Pa): one slicewise member per slice, each different."""
    slices = [plane_wave_dataset(n=n, g=g) for g in gs]
    first = slices[0]
    return Dataset(
        u=np.stack([s.u for s in slices], axis=-1),
        frequency=first.frequency,
        spacing=np.append(first.spacing, first.spacing[0]),
    )


VOXEL = 1.5e-3  # m, the device-layout tests' volume


def plane_wave_volume(shape, direction, f=60.0, g=3000.0):
    axes = np.meshgrid(*[np.arange(n) * VOXEL for n in shape], indexing="ij")
    k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / g)
    return np.exp(1j * k * sum(d * a for d, a in zip(direction, axes, strict=True)))


def volume():
    """7 x 6 x 5 voxels (210: shards of 53, 53, 52, 52 on 4 devices), F = C = 1."""
    shape = (7, 6, 5)
    return Dataset(
        u=plane_wave_volume(shape, (0.48, 0.6, 0.64))[None, None],
        frequency=np.array([60.0]),
        spacing=np.full(3, VOXEL),
        mu=np.full(shape, 3000.0 + 0j),
    )


def shear_volume(grid=(28, 24, 10), h=1.5e-3, mu0=3000.0 + 300.0j):
    """Shear plane waves (polarised across their direction) in a uniform volume of modulus
    ``mu0`` (Pa), three components, at 60 and 80 Hz: (the Dataset, mu0)."""
    x, y, z = np.meshgrid(*[np.arange(n) * h for n in grid], indexing="ij")
    u = np.zeros((2, 3, *grid), complex)
    for i, f in enumerate((60.0, 80.0)):
        k = 2 * np.pi * f * np.sqrt(1000.0 / mu0)
        u[i, 2] = np.exp(1j * k * (0.8 * x + 0.6 * y))  # along (0.8, 0.6, 0), polarised z
        u[i, 0] = 0.5 * np.exp(1j * k * (0.6 * y + 0.8 * z))  # along (0, 0.6, 0.8), along x
    return Dataset(u=u, frequency=np.array([60.0, 80.0]), spacing=np.full(3, h)), mu0


# Small networks for fits of the plane waves below (tests/fit/test_joint.py, test_law_choice.py).
WAVES_FIT = dict(
    width=48,
    depth=2,
    mu_width=8,
    mu_depth=1,
    n_features=32,
    batch_size=512,
    steps=2000,
    sync_interval=100,
    pde_warmup=300,
    learning_rate=3e-3,
)


def springpot_waves(alpha=0.3, g90=3000.0, n=24, h=1e-3, freqs=(60.0, 90.0)):
    """Two plane waves per frequency in a homogeneous springpot medium, exact:
    mu_f = |G*|_90 (f / 90 Hz)^alpha exp(i alpha pi / 2), k_f = omega sqrt(rho / mu_f)."""
    freqs = np.asarray(freqs, float)
    mu = g90 * (freqs / freqs.max()) ** alpha * np.exp(1j * alpha * np.pi / 2)
    return plane_waves(mu, freqs, n, h)


def voigt_waves(storage=3000.0, eta=2.0, n=24, h=1e-3, freqs=(60.0, 90.0)):
    """As :func:`springpot_waves` in a Voigt medium: mu_f = G' + i omega_f eta."""
    freqs = np.asarray(freqs, float)
    return plane_waves(storage + 2j * np.pi * freqs * eta, freqs, n, h)


def plane_waves(mu, freqs, n, h):
    """Two plane waves per frequency of modulus mu_f (Pa), k_f = omega sqrt(rho / mu_f)."""
    x, y = np.arange(n)[:, None] * h, np.arange(n)[None, :] * h
    u = []
    for f, m in zip(freqs, mu, strict=True):
        k = 2 * np.pi * f * np.sqrt(1000 / m)
        u.append([np.exp(1j * k * (0.8 * x + 0.6 * y)), np.exp(1j * k * (-0.6 * x + 0.8 * y))])
    grid = np.ones((1, n, n))
    return Dataset(
        u=np.array(u), frequency=freqs, spacing=np.array([h, h]), mu=mu[:, None, None] * grid
    )
