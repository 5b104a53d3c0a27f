"""The shear wavelength of a measured wave field, estimated from u alone (no modulus).

For a wave ``u = exp(i k . x)`` (``k`` complex for a damped wave) the three-point second
difference along grid axis j gives exactly

    D2_j u = -(2 - 2 cos(k_j h_j)) / h_j^2  u,

so the Rayleigh quotient over the voxels where that stencil fits,

    R_j = -sum conj(u) D2_j u / sum |u|^2      (1 / m^2),

inverts to ``k_j = arccos(1 - R_j h_j^2 / 2) / h_j`` without the stencil's bias at coarse
sampling, and ``|k|^2 = |sum_j k_j^2| = rho omega^2 / |mu|``: the wavelength
``lambda = 2 pi / |k|`` (m) is the one ``sqrt(|mu| / rho) / f`` of the data's effective
modulus. A field made of several plane waves of one wavenumber (standing waves, waves
from several drivers) gives their power-weighted quotient; heterogeneous tissue, the
power-weighted mean of ``|k|^2``. The through-plane share ``|k_2^2| / sum_j |k_j^2|``
(3-D grids) says how much of the wave's curvature runs along the slice axis: 0 for
waves in the slice plane, 1/3 for a wave field isotropic in 3-D, 1 for a wave
travelling through the slices. Sums run over every component of a frequency (one
quotient per frequency), inside the mask, on finite values only (NaN background).

White noise of RMS sigma per voxel adds ``2 sigma^2`` per voxel to the numerator's sum
and ``sigma^2`` to the denominator's; both are subtracted with the noise estimate of
:func:`helmholtz_pinn.assess.stencils.noise_rms`, so the estimate stays unbiased at
-20 dB and -10 dB without smoothing (a smoothing filter would pass each plane wave
unchanged but weight a superposition towards its longer waves).

Limits: compressional waves (metres long) in elastic data lengthen the estimate by their
share of the power; an axis with fewer than 3 voxels (a 2-D slice of a volume) carries
no through-plane wavenumber, so a slice of a wave travelling out of plane reads longer;
the noise terms are themselves estimated, and on a field of a few hundred voxels at
-10 dB their scatter (5-10 % in sigma) moves a long wave's estimate by up to a quarter
(24 x 24 voxels, 20 per wavelength); at -20 dB, or on 1500 voxels or more, within 5 %.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from helmholtz_pinn.assess import stencils
from helmholtz_pinn.errors import InputError

__all__ = ["Wavelength", "estimate", "estimate_dataset"]


class Wavelength(NamedTuple):
    """Per frequency, shape (F,): ``metres`` the shear wavelength (m), ``voxels`` the
    same in voxels (the mean in-plane voxel size, grid axes 0 and 1), ``power_used`` the
    fraction of the mask's field power left after the noise is subtracted (near 1 for
    clean data), ``through_plane`` the share of ``|k|^2`` along grid axis 2 (module doc;
    NaN on 2-D grids and where axis 2 has no 3 voxels in a row); NaN where no estimate
    was possible."""

    metres: np.ndarray
    voxels: np.ndarray
    power_used: np.ndarray
    through_plane: np.ndarray

    @property
    def shortest_voxels(self) -> float:
        """The shortest finite wavelength over the frequencies, voxels (NaN if none)."""
        finite = self.voxels[np.isfinite(self.voxels)]
        return float(finite.min()) if finite.size else float("nan")

    @property
    def through_plane_at_shortest(self) -> float:
        """``through_plane`` at the frequency of the shortest finite wavelength (NaN if
        none)."""
        finite = np.isfinite(self.voxels)
        if not finite.any():
            return float("nan")
        return float(self.through_plane[np.flatnonzero(finite)[np.argmin(self.voxels[finite])]])

    @property
    def shortest_metres(self) -> float:
        """The shortest finite wavelength over the frequencies, m (NaN if none)."""
        finite = self.metres[np.isfinite(self.metres)]
        return float(finite.min()) if finite.size else float("nan")


def estimate(
    u: np.ndarray, spacing, mask: np.ndarray | None = None, *, denoise: bool = True
) -> Wavelength:
    """The shear wavelength per frequency of ``u`` (module doc).

    Args:
      u: complex displacement ``(F, C, *grid)`` (any length unit; 2-D or 3-D grids, one
        or more components); NaN/Inf voxels are not read.
      spacing: voxel size per grid axis, m.
      mask: bool ``grid``, the voxels to read (None: all finite voxels).
      denoise: subtract the estimated white-noise terms (``False``: the plain quotient).

    Returns a :class:`Wavelength`; a frequency with no finite estimate (a field of pure
    noise, no axis of 3 voxels, no valid voxel) is NaN there.
    """
    u = np.asarray(u)
    if u.ndim < 3 or not np.iscomplexobj(u):
        raise InputError(f"u must be complex with shape (F, C, *grid); got {u.dtype} {np.shape(u)}")
    grid = u.shape[2:]
    h = stencils.check_spacing(spacing, len(grid))
    if h.size != len(grid):
        raise InputError(f"spacing needs one entry per grid axis ({len(grid)}); got {h.size}")
    mask = np.ones(grid, bool) if mask is None else np.asarray(mask, bool)
    field, valid = stencils.usable(u.astype(np.complex128), mask, grid)
    noise2 = np.zeros(u.shape[:2])
    if denoise:
        noise2 = np.nan_to_num(stencils.noise_rms(field, valid), nan=0.0) ** 2  # (F, C)
    k2 = np.zeros(u.shape[0], complex)
    k2_abs = np.zeros((len(grid), u.shape[0]))  # |k_j^2| per axis and frequency
    used = np.full(u.shape[0], np.nan)
    axes = 0
    for j in range(len(grid)):
        if grid[j] < 3:
            continue
        d2 = stencils.fd_axis(field, valid, j, 2, central_only=True)  # per voxel^2
        inside = np.isfinite(d2).all(axis=(0, 1)) & valid
        n = int(inside.sum())
        if n == 0:
            continue
        axes += 1
        # sums over the stencil's voxels and the components, per frequency
        num = -np.sum(np.conj(field[..., inside]) * d2[..., inside], axis=(1, 2))
        den = np.sum(np.abs(field[..., inside]) ** 2, axis=(1, 2))
        num = num - 2.0 * n * noise2.sum(axis=1)  # E[conj(e) D2 e] = -2 sigma^2 per voxel
        signal = den - n * noise2.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(signal > 0, num / signal, np.nan)  # R_j h_j^2
            kh = np.arccos(1.0 - ratio.astype(complex) / 2.0)
            used = np.where(np.isnan(used), signal / den, np.fmin(used, signal / den))
        k2 = k2 + (kh / h[j]) ** 2
        k2_abs[j] = np.abs((kh / h[j]) ** 2)
    if axes == 0:
        raise InputError(
            f"no grid axis has 3 valid voxels in a row inside the mask (grid {grid}): "
            "no wavelength can be estimated"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        metres = 2.0 * np.pi / np.sqrt(np.abs(k2))
    metres = np.where(np.isfinite(metres) & (metres > 0), metres, np.nan)
    voxel = float(np.mean(h[:2]))
    through = np.full(u.shape[0], np.nan)
    if len(grid) == 3 and grid[2] >= 3:
        with np.errstate(divide="ignore", invalid="ignore"):
            through = k2_abs[2] / k2_abs.sum(axis=0)
        through = np.where(np.isfinite(metres), through, np.nan)
    return Wavelength(metres, metres / voxel, used, through)


@stencils.once_per_dataset
def estimate_dataset(dataset, *, denoise: bool = True) -> Wavelength:
    """:func:`estimate` of a :class:`~helmholtz_pinn.io.dataset.Dataset`'s u, spacing and
    mask."""
    return estimate(dataset.u, dataset.spacing, dataset.mask, denoise=denoise)
