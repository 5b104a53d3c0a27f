"""The AHI baseline against analytic plane waves, and the FD Laplacian's order."""

import math

import numpy as np
import pytest

from helmholtz_pinn.baselines import ahi, estimate_modulus, fd_laplacian
from helmholtz_pinn.data import Dataset

RHO = 1000.0
MU = 3000.0 + 377.0j  # Pa
H = 1e-3  # m


def wavenumber(f: float, mu: complex = MU) -> complex:
    """Root of k^2 = rho omega^2 / mu whose wave decays along its direction."""
    k = 2 * np.pi * f * np.sqrt(RHO / mu)
    return k if k.imag >= 0 else -k


def coords(shape, spacing):
    axes = [np.arange(n) * h for n, h in zip(shape, spacing, strict=True)]
    return np.meshgrid(*axes, indexing="ij")


def plane_wave(shape, spacing, f, direction, mu=MU):
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    phase = sum(di * xi for di, xi in zip(d, coords(shape, spacing), strict=True))
    return np.exp(1j * wavenumber(f, mu) * phase)


def make_dataset(u, freqs, spacing):
    grid = u.shape[2:]
    return Dataset(
        u=u,
        frequency=np.asarray(freqs, dtype=float),
        spacing=np.asarray(spacing, dtype=float),
        mask=np.ones(grid, dtype=bool),
        rho=RHO,
    )


def rel_err(mu, margin):
    inner = tuple(slice(margin, -margin) for _ in range(mu.ndim))
    return np.abs(mu[inner] - MU) / abs(MU)


def test_plane_wave_resolution():
    # 60 Hz, 3 kPa, 1 mm voxels: about 29 points per wavelength.
    wavelength = 2 * np.pi / abs(wavenumber(60.0).real)
    assert wavelength / H > 25


def test_ahi_exact_on_plane_wave():
    shape, spacing = (60, 50), (H, H)
    u = plane_wave(shape, spacing, 60.0, (1.0, 0.0))[None, None]
    mu = ahi(make_dataset(u, [60.0], spacing))
    assert mu.shape == shape and np.iscomplexobj(mu)
    # Observed 0.39 % = (kh)^2 / 12, the central-difference truncation error.
    assert rel_err(mu, 1).max() < 0.01
    # Phase (loss modulus) is much better than the magnitude: observed 1e-5 relative.
    assert np.allclose(mu[1:-1, 1:-1].imag, MU.imag, rtol=1e-3)
    # One-sided edge stencil: observed 4.2 % (11x the central constant).
    assert np.abs(mu - MU).max() / abs(MU) < 0.06


def test_ahi_two_frequencies_two_components():
    shape, spacing = (60, 50), (H, H)
    freqs = [50.0, 70.0]
    dirs = [(1.0, 0.3), (-0.4, 1.0)]
    u = np.stack([np.stack([plane_wave(shape, spacing, f, d) for d in dirs]) for f in freqs])
    ds = make_dataset(u, freqs, spacing)
    mu = ahi(ds)
    assert mu.shape == shape
    assert rel_err(mu, 1).max() < 0.01  # observed 0.36 % (0.44 % at 70 Hz alone)
    per_f = ahi(ds, per_frequency=True)
    assert per_f.shape == (2, *shape)
    for mu_f in per_f:
        assert rel_err(mu_f, 1).max() < 0.01


def test_ahi_3d_anisotropic_spacing():
    spacing = (1e-3, 1.5e-3, 2e-3)
    shape = (30, 24, 16)
    u = plane_wave(shape, spacing, 40.0, (1.0, 0.5, 0.7))[None, None]
    mu = ahi(make_dataset(u, [40.0], spacing))
    assert mu.shape == shape
    assert rel_err(mu, 1).max() < 0.01  # observed 0.12 %


@pytest.mark.parametrize("ndim", [2, 3])
def test_fd_laplacian_second_order(ndim):
    # f = sin(a x) cos(b y) [exp(c z)] on the unit square/cube, anisotropic spacing.
    a, b, c = 3.0, 2.0, 1.5
    interior, whole, hs = [], [], []
    for n in (24, 48, 96, 192) if ndim == 2 else (20, 40, 80):
        spacing = [1.0 / (n - 1), 0.7 / (n - 1), 0.5 / (n - 1)][:ndim]
        x = coords((n,) * ndim, spacing)
        f = np.sin(a * x[0]) * np.cos(b * x[1])
        exact = -(a**2 + b**2) * f
        if ndim == 3:
            f = f * np.exp(c * x[2])
            exact = exact * np.exp(c * x[2]) + c**2 * f
        err = np.abs(fd_laplacian(f[None], spacing)[0] - exact)
        interior.append(err[(slice(1, -1),) * ndim].max())
        whole.append(err.max())
        hs.append(spacing[0])
    slope_interior = np.polyfit(np.log(hs), np.log(interior), 1)[0]
    slope_whole = np.polyfit(np.log(hs), np.log(whole), 1)[0]
    # Central stencil: observed 2.00 (2-D), 1.98 (3-D).
    assert 1.9 < slope_interior < 2.1
    # One-sided edge stencil (max over the whole grid): second order with a large h^3
    # term, so the fitted slope approaches 2 from above: observed 2.25 (2-D), 2.35 (3-D).
    assert 1.9 < slope_whole < 2.5
    assert np.all(np.diff(np.log(whole)) < 0)


def test_fd_laplacian_leading_axes_and_complex():
    rng = np.random.default_rng(1)
    u = rng.normal(size=(2, 3, 8, 9)) + 1j * rng.normal(size=(2, 3, 8, 9))
    lap = fd_laplacian(u, (1.0, 2.0))
    assert lap.shape == u.shape and np.iscomplexobj(lap)
    one = fd_laplacian(u[1, 2], (1.0, 2.0))
    np.testing.assert_allclose(lap[1, 2], one)
    i, j = 4, 5
    v = u[1, 2]
    expected = (
        v[i - 1, j] - 2 * v[i, j] + v[i + 1, j] + (v[i, j - 1] - 2 * v[i, j] + v[i, j + 1]) / 4
    )
    np.testing.assert_allclose(one[i, j], expected)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"smoothing": "gaussian", "sigma": 2.0},
        {"smoothing": "savgol", "window": 7, "polyorder": 2},
        {"smoothing": "savgol", "window": 9, "polyorder": 3},
    ],
)
def test_smoothing_keeps_plane_wave_in_interior(kwargs):
    # Both filters are shift-invariant away from the edges, so they scale u and Lap u
    # by the same factor and leave the interior AHI estimate unchanged.
    shape, spacing = (60, 50), (H, H)
    u = plane_wave(shape, spacing, 60.0, (1.0, 0.5))[None, None]
    mu = ahi(make_dataset(u, [60.0], spacing), **kwargs)
    assert mu.shape == shape
    assert rel_err(mu, 10).max() < 0.01  # observed 0.27 %, as without smoothing


def test_gaussian_smoothing_reduces_noise_error():
    rng = np.random.default_rng(0)
    shape, spacing = (80, 80), (H, H)
    u = plane_wave(shape, spacing, 60.0, (1.0, 0.2))
    amp = np.sqrt(np.mean(np.abs(u) ** 2))
    noise = 0.01 * amp * (rng.normal(size=shape) + 1j * rng.normal(size=shape)) / math.sqrt(2)
    ds = make_dataset((u + noise)[None, None], [60.0], spacing)
    err_none = np.median(rel_err(ahi(ds), 10))
    err_gauss = np.median(rel_err(ahi(ds, smoothing="gaussian", sigma=2.0), 10))
    # Observed at 1 % noise amplitude (seeds 0-4): 0.57-0.58 without smoothing,
    # 0.010 with sigma = 2 voxels.
    assert err_gauss < 0.1 * err_none
    assert err_gauss < 0.05


def test_estimate_modulus_plane_wave():
    shape, spacing = (60, 50), (H, H)
    u = plane_wave(shape, spacing, 60.0, (1.0, 0.0))[None, None]
    est = estimate_modulus(make_dataset(u, [60.0], spacing))
    assert isinstance(est, float)
    assert abs(est - abs(MU)) / abs(MU) < 0.02  # observed 0.4 %


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"smoothing": "median"}, "median"),
        ({"smoothing": None}, "gaussian"),
        ({"smoothing": "gaussian", "sigma": 0.0}, "sigma"),
        ({"smoothing": "savgol", "window": 6}, "window"),
        ({"smoothing": "savgol", "window": 5, "polyorder": 5}, "polyorder"),
        ({"smoothing": "savgol", "window": 99}, "window"),
        ({"per_frequency": "yes"}, "per_frequency"),
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    shape, spacing = (20, 20), (H, H)
    u = plane_wave(shape, spacing, 60.0, (1.0, 0.0))[None, None]
    with pytest.raises(ValueError, match=match):
        ahi(make_dataset(u, [60.0], spacing), **kwargs)


def test_fd_laplacian_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 3 points"):
        fd_laplacian(np.zeros((10, 2)), (1.0, 1.0))
    with pytest.raises(ValueError, match="spacing"):
        fd_laplacian(np.zeros((10, 10)), (1.0, -1.0))
