"""Classical baseline: algebraic Helmholtz inversion (AHI) in the multi-frequency MDEV form.

Local homogeneity turns the Helmholtz equation ``mu Lap(u) + rho omega^2 u = 0`` into a
voxelwise algebraic one. Summing over components ``c`` and frequencies ``f`` (each with
its own ``rho omega_f^2``, ``omega_f = 2 pi f``):

    |G*|  = sum_{f,c} rho omega_f^2 |u_fc|  /  sum_{f,c} |Lap u_fc|                 [Pa]
    phi   = arccos( - sum_{f,c} (Re u Re Lap u + Im u Im Lap u) / sum_{f,c} |u| |Lap u| )
    mu    = |G*| (cos phi + i sin phi)                                               [Pa]

``u`` may be in any length unit (it cancels); ``Lap u`` is in that unit per m^2, from
second-order finite differences with the true voxel spacing (m). ``phi`` lies in
``[0, pi]``, so the loss modulus is never negative. The Laplacian amplifies noise;
smoothing ``u`` first (Gaussian or Savitzky-Golay) is the usual remedy.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np
import scipy.ndimage
import scipy.signal

if TYPE_CHECKING:
    from .data import Dataset

__all__ = ["SMOOTHING_CHOICES", "ahi", "estimate_modulus", "fd_laplacian"]

SMOOTHING_CHOICES = ("none", "gaussian", "savgol")


def fd_laplacian(u: np.ndarray, spacing) -> np.ndarray:
    """Finite-difference Laplacian over the last ``len(spacing)`` axes of ``u``.

    Interior points use the central stencil ``(u[i-1] - 2 u[i] + u[i+1]) / h^2``. The
    first and last point of each axis use the one-sided stencil
    ``(2 u[0] - 5 u[1] + 4 u[2] - u[3]) / h^2`` (mirrored at the far end), so the whole
    grid is second-order accurate; its truncation constant (11/12) is 11x the central
    one (1/12) and it amplifies noise more, so edge voxels are the least reliable.
    Axes with exactly 3 points use the 3-point stencil at the edges (first order).

    Args:
      u: real or complex array ``(..., *grid)``; leading axes (frequency, component)
        are independent fields.
      spacing: voxel size per spatial axis (m), length ``ndim`` (2 or 3 typically).

    Returns:
      Array of ``u``'s shape (float64 or complex128), in units of ``u`` per m^2.
    """
    u = np.asarray(u)
    h = np.asarray(spacing, dtype=float).reshape(-1)
    ndim = h.size
    if ndim == 0 or ndim > u.ndim:
        raise ValueError(
            f"spacing must have one entry per spatial axis (1..{u.ndim}); got {h.size} entries"
        )
    if not np.all(np.isfinite(h) & (h > 0)):
        raise ValueError(f"spacing must be finite and > 0 (m); got {h.tolist()}")
    grid = u.shape[u.ndim - ndim :]
    if min(grid) < 3:
        raise ValueError(
            f"fd_laplacian needs at least 3 points along each spatial axis; got grid {grid}"
        )
    u = u.astype(np.complex128 if np.iscomplexobj(u) else np.float64, copy=False)
    lap = np.zeros_like(u)
    for k in range(ndim):
        ax = u.ndim - ndim + k
        a = np.moveaxis(u, ax, -1)
        d2 = np.empty_like(a)
        d2[..., 1:-1] = a[..., :-2] - 2.0 * a[..., 1:-1] + a[..., 2:]
        if a.shape[-1] >= 4:
            d2[..., 0] = 2.0 * a[..., 0] - 5.0 * a[..., 1] + 4.0 * a[..., 2] - a[..., 3]
            d2[..., -1] = 2.0 * a[..., -1] - 5.0 * a[..., -2] + 4.0 * a[..., -3] - a[..., -4]
        else:
            d2[..., 0] = d2[..., 1]
            d2[..., -1] = d2[..., 1]
        lap += np.moveaxis(d2, -1, ax) / h[k] ** 2
    return lap


def ahi(
    dataset: Dataset,
    *,
    smoothing: str = "none",
    sigma: float = 1.0,
    window: int = 7,
    polyorder: int = 2,
    per_frequency: bool = False,
) -> np.ndarray:
    """Algebraic Helmholtz inversion (MDEV form); see the module docstring for the equation.

    Args:
      dataset: a :class:`~helmholtz_pinn.data.Dataset` (``u`` ``(F, C, *grid)``,
        ``frequency`` Hz, ``spacing`` m, ``rho`` kg/m^3).
      smoothing: ``"none"``, ``"gaussian"`` (``scipy.ndimage.gaussian_filter`` over the
        spatial axes, standard deviation ``sigma`` voxels, reflecting edges) or
        ``"savgol"`` (``scipy.signal.savgol_filter`` along each spatial axis in turn,
        odd ``window`` voxels, polynomial order ``polyorder``, polynomial fit at the
        edges). Real and imaginary parts are smoothed separately, over the whole grid
        (the mask is not used).
      sigma: Gaussian width in voxels (> 0); used only with ``"gaussian"``.
      window, polyorder: Savitzky-Golay window (odd, >= 3, <= the shortest axis) and
        order (0 <= polyorder < window); used only with ``"savgol"``.
      per_frequency: if True invert each frequency on its own (sums over components
        only) and return ``(F, *grid)``.

    Returns:
      Complex shear modulus ``mu = G' + i G''`` in Pa, shape ``grid`` (or
      ``(F, *grid)``). Voxels where ``Lap u`` vanishes for every field are ``nan``.
    """
    u = np.asarray(dataset.u)
    if u.ndim < 3:
        raise ValueError(f"dataset.u must have shape (F, C, *grid); got {u.shape}")
    freq = np.asarray(dataset.frequency, dtype=float).reshape(-1)
    if freq.shape != (u.shape[0],):
        raise ValueError(f"dataset.frequency must have shape ({u.shape[0]},); got {freq.shape}")
    if per_frequency not in (True, False):
        raise ValueError(f"per_frequency must be True or False; got {per_frequency!r}")
    u = _smooth(u, smoothing=smoothing, sigma=sigma, window=window, polyorder=polyorder)
    lap = fd_laplacian(u, dataset.spacing)

    rho_w2 = float(dataset.rho) * (2.0 * math.pi * freq) ** 2  # (F,), Pa / m^2
    rho_w2 = rho_w2.reshape((-1,) + (1,) * (u.ndim - 1))
    abs_u = np.abs(u)
    abs_lap = np.abs(lap)
    num_mag = rho_w2 * abs_u  # (F, C, *grid)
    dot = u.real * lap.real + u.imag * lap.imag
    norm = abs_u * abs_lap
    sum_axes = (1,) if per_frequency else (0, 1)
    num_mag, den_mag, dot, norm = (np.sum(a, axis=sum_axes) for a in (num_mag, abs_lap, dot, norm))
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = num_mag / den_mag
        cos_phi = np.clip(-dot / norm, -1.0, 1.0)
    mag = np.where(den_mag > 0, mag, np.nan)
    phi = np.arccos(cos_phi)
    return mag * (np.cos(phi) + 1j * np.sin(phi))


def estimate_modulus(dataset: Dataset, *, sigma: float = 1.5) -> float:
    """Robust scalar reference modulus in Pa, for nondimensionalising the PINN.

    The median over the mask of ``|mu|`` from :func:`ahi` with Gaussian smoothing of
    ``sigma`` voxels (finite voxels only). A median ignores the edge voxels and noisy
    outliers that AHI produces; the value is a scale, not an accurate estimate.
    """
    mag = np.abs(ahi(dataset, smoothing="gaussian", sigma=sigma))
    mask = np.ones(dataset.grid, dtype=bool) if dataset.mask is None else dataset.mask
    vals = mag[np.asarray(mask, dtype=bool) & np.isfinite(mag) & (mag > 0)]
    if vals.size == 0:
        raise ValueError(
            "estimate_modulus: AHI gave no finite, positive modulus inside the mask; "
            "check that u is non-zero there"
        )
    return float(np.median(vals))


def _smooth(u: np.ndarray, *, smoothing: str, sigma: float, window: int, polyorder: int):
    """Smooth each field of ``u`` ``(F, C, *grid)`` over its spatial axes."""
    if not isinstance(smoothing, str) or smoothing not in SMOOTHING_CHOICES:
        raise ValueError(f"smoothing must be one of {SMOOTHING_CHOICES}; got {smoothing!r}")
    spatial = tuple(range(2, u.ndim))
    if smoothing == "none":
        return u
    if smoothing == "gaussian":
        if not (isinstance(sigma, numbers.Real) and math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0 (voxels); got {sigma!r}")
        sig = (0, 0) + (float(sigma),) * len(spatial)

        def filt(a):
            return scipy.ndimage.gaussian_filter(a, sigma=sig, mode="reflect")

    else:
        if isinstance(window, bool) or not isinstance(window, numbers.Integral):
            raise ValueError(f"window must be an odd integer >= 3 (voxels); got {window!r}")
        if window < 3 or window % 2 == 0:
            raise ValueError(f"window must be an odd integer >= 3 (voxels); got {window}")
        if window > min(u.shape[2:]):
            raise ValueError(
                f"window must be <= the shortest grid axis {min(u.shape[2:])}; got {window}"
            )
        if isinstance(polyorder, bool) or not isinstance(polyorder, numbers.Integral):
            raise ValueError(f"polyorder must be an integer in [0, window); got {polyorder!r}")
        if not 0 <= polyorder < window:
            raise ValueError(f"polyorder must be in [0, window) = [0, {window}); got {polyorder}")

        def filt(a):
            for ax in spatial:
                a = scipy.signal.savgol_filter(
                    a, int(window), int(polyorder), axis=ax, mode="interp"
                )
            return a

    u = np.asarray(u)
    if np.iscomplexobj(u):
        return filt(u.real.astype(float)) + 1j * filt(u.imag.astype(float))
    return filt(u.astype(float))
