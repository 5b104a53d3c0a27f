"""Finite differences on gridded wave images, mask-aware: the Laplacian, the curl and
the noise level of measured fields (numpy; used by the PDE forms' data transforms, the
noise-aware weights and the classical baselines).

Arrays are ``(..., *grid)``: leading axes (frequency, component) are independent fields.
Only ``valid`` voxels (inside the mask, with finite values in every field) are read;
spacing ``h`` is per spatial axis in m, so derivatives come out in units of the field per
m (per m^2 for second derivatives).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from helmholtz_pinn.io.dataset import Dataset

# Stencils (offsets, weights) per derivative order, in order of preference: central;
# one-sided of second order; of first order (used forwards and mirrored backwards).
_STENCILS = {
    1: (((-1, 0, 1), (-0.5, 0.0, 0.5)),),
    2: (((-1, 0, 1), (1.0, -2.0, 1.0)), ((0, 1, 2, 3), (2, -5, 4, -1)), ((0, 1, 2), (1, -2, 1))),
}
# Sixth difference (binomial weights of (1 - shift)^6): a smooth wave u = exp(i k x)
# passes with gain (2 sin(k h / 2))^6 (0.2 at 8 voxels per wavelength), white noise
# with gain sqrt(sum w^2) = sqrt(924) = 30.4.
_SIXTH = np.array([1.0, -6.0, 15.0, -20.0, 15.0, -6.0, 1.0])
MAD_TO_SIGMA = 1.482602218505602  # sigma of a normal variable = 1.4826 median |x|


def check_spacing(spacing, max_ndim: int) -> np.ndarray:
    """Voxel size per axis (m) as a float array; a clear error unless 1..max_ndim
    finite positive entries."""
    h = np.asarray(spacing, dtype=float).reshape(-1)
    if h.size == 0 or h.size > max_ndim:
        raise InputError(
            f"spacing must have one entry per spatial axis (1..{max_ndim}); got {h.size} entries"
        )
    if not np.all(np.isfinite(h) & (h > 0)):
        raise InputError(f"spacing must be finite and > 0 (m); got {h.tolist()}")
    return h


def usable(a: np.ndarray, mask, grid) -> tuple[np.ndarray, np.ndarray]:
    """``(a zero-filled, mask & finite in every field)``; ``a`` is ``(..., *grid)``."""
    mask = np.asarray(mask)
    if mask.shape != tuple(grid):
        raise InputError(f"mask must have the grid shape {tuple(grid)}; got {mask.shape}")
    lead = tuple(range(a.ndim - len(grid)))
    valid = mask.astype(bool) & np.all(np.isfinite(a), axis=lead)
    return np.where(valid, a, 0), valid


def _shifted(x: np.ndarray, offset: int, axis: int, pad: int) -> np.ndarray:
    """x[i + offset] along ``axis`` of a copy padded by ``pad`` on both sides."""
    n = x.shape[axis] - 2 * pad
    return np.take(x, np.arange(pad + offset, pad + offset + n), axis=axis)


def _pad(a: np.ndarray, axis: int, pad: int) -> np.ndarray:
    return np.pad(a, [(pad, pad) if i == axis else (0, 0) for i in range(a.ndim)])


def fd_axis(a, valid: np.ndarray, k: int, order: int, central_only: bool = False):
    """Derivative of ``order`` (1 or 2, per voxel^order) along grid axis ``k`` of
    ``a`` ``(..., *grid)``, reading only ``valid`` (``grid``) voxels; NaN outside
    ``valid`` and where no stencil (only the central one if ``central_only``) fits."""
    ax = a.ndim - valid.ndim + k
    ap, vp = _pad(a, ax, 3), _pad(valid, k, 3)
    central, *one_sided = _STENCILS[order]
    stencils = [central]
    for offs, ws in [] if central_only else one_sided:  # forwards, mirrored backwards
        stencils += [(offs, ws), (tuple(-o for o in offs), tuple((-1) ** order * w for w in ws))]
    out = np.full(a.shape, np.nan, dtype=a.dtype)
    todo = valid.copy()
    for offsets, weights in stencils:
        ok = todo & np.logical_and.reduce([_shifted(vp, o, k, 3) for o in offsets])
        val = sum(w * _shifted(ap, o, ax, 3) for o, w in zip(offsets, weights, strict=True) if w)
        out = np.where(ok, val, out)
        todo &= ~ok
    return out


def laplacian(a, valid, h, central_only: bool = False) -> np.ndarray:
    """sum_k d_k^2 a / h_k^2 by :func:`fd_axis` (units of a per m^2)."""
    return sum(fd_axis(a, valid, k, 2, central_only) / h[k] ** 2 for k in range(h.size))


def fd_laplacian(u: np.ndarray, spacing, *, mask: np.ndarray | None = None) -> np.ndarray:
    """Finite-difference Laplacian over the last ``len(spacing)`` axes of ``u``.

    Along each axis: the central stencil ``(u[i-1] - 2 u[i] + u[i+1]) / h^2`` where both
    neighbours are usable, else the one-sided ``(2 u[i] - 5 u[i+1] + 4 u[i+2] - u[i+3])
    / h^2`` towards the usable side (second order, but truncation constant 11/12 vs 1/12
    and 2.8x the noise gain: edge voxels are the least reliable), else the first-order
    ``u[i] - 2 u[i+1] + u[i+2]``, else NaN. Without a mask only the grid edges are edges.

    Args:
      u: real or complex array ``(..., *grid)``.
      spacing: voxel size per spatial axis (m), length ``ndim`` (2 or 3 typically).
      mask: optional bool array of shape ``grid``: voxels to read. Voxels outside it, or
        where ``u`` is not finite in any field, are never read and are NaN in the result.

    Returns:
      Array of ``u``'s shape (float64 or complex128), in units of ``u`` per m^2.
    """
    u = np.asarray(u)
    h = check_spacing(spacing, u.ndim)
    grid = u.shape[u.ndim - h.size :]
    if min(grid) < 3:
        raise InputError(
            f"fd_laplacian needs at least 3 points along each spatial axis; got grid {grid}"
        )
    u = u.astype(np.complex128 if np.iscomplexobj(u) else np.float64, copy=False)
    valid = np.ones(grid, bool) if mask is None else None
    if valid is None:
        u, valid = usable(u, mask, grid)
    return laplacian(u, valid, h)


def curl(u: np.ndarray, valid: np.ndarray, h: np.ndarray) -> np.ndarray:
    """q = curl u = (d_y u_z - d_z u_y, d_z u_x - d_x u_z, d_x u_y - d_y u_x) for
    ``u`` ``(F, 3, *grid)`` (component c along grid axis c), units of u per m.

    Central differences ``(u[i+1] - u[i-1]) / 2h`` only, so q is NaN on the outer voxel
    layer of ``valid``. A 2-D slice ``(nx, ny)`` of 3-D motion assumes the through-plane
    derivatives vanish (d_z = 0: waves travel in the slice plane).
    """
    if u.shape[1] != 3:
        raise InputError(f"the curl needs three displacement components; got C = {u.shape[1]}")

    def d(c: int, k: int):  # d u_c / d x_k, (F, *grid)
        return fd_axis(u[:, c], valid, k, 1) / h[k] if k < h.size else 0.0

    return np.stack([d(2, 1) - d(1, 2), d(0, 2) - d(2, 0), d(1, 0) - d(0, 1)], axis=1)


def noise_rms(u: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Estimated RMS of white noise in each field of ``u`` ``(F, C, *grid)`` complex
    (units of u), shape (F, C).

    Estimator: the sixth difference D6 along each grid axis, at voxels whose whole
    7-point stencil is valid, removes a smooth wave almost entirely (gain
    (2 sin(k h / 2))^6: 0.2 at 8 voxels per wavelength against the noise gain 30.4) and
    passes white noise with standard deviation sqrt(924) sigma per real part. A robust
    per-part sigma is MAD_TO_SIGMA median(|Re D6|, |Im D6|) / sqrt(924); the smallest
    over the axes (the one least touched by the signal) is taken, and the complex RMS is
    sqrt(2) times it. Edges, inclusions and sparse large residuals do not move a median.
    A field with no complete stencil gets NaN.
    """
    gain = float(np.sqrt(np.sum(_SIXTH**2)))
    lead = u.ndim - valid.ndim
    best = np.full(u.shape[:lead], np.inf)
    for k in range(valid.ndim):
        if valid.shape[k] < _SIXTH.size:
            continue
        ax = lead + k
        ap, vp = _pad(u, ax, 3), _pad(valid, k, 3)
        ok = np.logical_and.reduce([_shifted(vp, o, k, 3) for o in range(-3, 4)])
        if not ok.any():
            continue
        d6 = sum(w * _shifted(ap, o, ax, 3) for o, w in zip(range(-3, 4), _SIXTH, strict=True))
        parts = np.concatenate([d6.real[..., ok], d6.imag[..., ok]], axis=-1)
        best = np.minimum(best, MAD_TO_SIGMA * np.median(np.abs(parts), axis=-1) / gain)
    return np.where(np.isfinite(best), np.sqrt(2.0) * best, np.nan)


def field_rms(dataset: Dataset) -> np.ndarray:
    """(F, C) RMS of each field of ``dataset`` over its mask (the data's unit)."""
    u = dataset.u.reshape(dataset.n_freq, dataset.n_comp, -1)[..., dataset.mask.ravel()]
    return np.sqrt(np.mean(np.abs(u) ** 2, axis=-1))


def once_per_dataset(fn):
    """``fn(dataset)`` computed once per :class:`~helmholtz_pinn.io.dataset.Dataset` object
    and kept while the object lives (a Dataset is frozen and its arrays are not written in
    place): the plan and the fit checks read the same facts of the same data without a
    second pass over them. A call while another thread computes the same value waits for
    it (a value computed ahead in the background is not computed twice). The arrays
    returned are read-only; a call with keyword arguments is not cached."""
    memo: dict[int, tuple[weakref.ref, object]] = {}
    locks: dict[int, threading.Lock] = {}
    guard = threading.Lock()

    def forget(key: int) -> None:
        memo.pop(key, None)
        locks.pop(key, None)

    @functools.wraps(fn)
    def cached(dataset, **kwargs):
        if kwargs:
            return fn(dataset, **kwargs)
        key = id(dataset)
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            held = memo.get(key)
            if held is not None and held[0]() is dataset:
                return held[1]
            value = fn(dataset)
            for part in value if isinstance(value, tuple) else (value,):
                if isinstance(part, np.ndarray):
                    part.setflags(write=False)
            memo[key] = (weakref.ref(dataset, lambda _, key=key: forget(key)), value)
            return value

    return cached


@once_per_dataset
def field_noise(dataset: Dataset) -> np.ndarray:
    """(F, C) estimated noise RMS of each field (:func:`noise_rms`,
    0 where no 7-voxel stencil fits)."""
    zero_filled, valid = usable(dataset.u, dataset.mask, dataset.grid)
    return np.nan_to_num(noise_rms(zero_filled, valid), nan=0.0)
