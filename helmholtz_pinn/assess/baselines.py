"""Classical baselines: algebraic Helmholtz inversion (AHI) in the multi-frequency MDEV
form, on the displacement (:func:`ahi`) or on its curl (:func:`curl_mdev`).

Local homogeneity turns the Helmholtz equation ``mu Lap(q) + rho omega^2 q = 0`` into a
voxelwise algebraic one. Summing over fields ``j`` (components of ``q = u``, or of
``q = curl u``) and frequencies ``f`` (each with its own ``rho omega_f^2``,
``omega_f = 2 pi f``):

    |G*|  = sum_{f,j} rho omega_f^2 |q_fj|  /  sum_{f,j} |Lap q_fj|                 [Pa]
    phi   = arccos( - sum_{f,j} (Re q Re Lap q + Im q Im Lap q) / sum_{f,j} |q| |Lap q| )
    mu    = |G*| (cos phi + i sin phi)                                               [Pa]

``u`` may be in any length unit (it cancels); derivatives are finite differences with
the true voxel spacing (m). ``phi`` lies in ``[0, pi]``, so the loss modulus is never
negative. The Laplacian amplifies noise; the usual remedy is smoothing (Gaussian or
Savitzky-Golay).

Masks: only voxels inside ``dataset.mask`` with finite ``u`` (every frequency and
component) are read; a zero-filled or NaN background never enters a result, and the map
is NaN outside the mask. The grid edge is a mask edge.

- Without smoothing, stencils turn one-sided where a neighbour is outside the mask
  (:func:`fd_laplacian`); a voxel with no stencil (a 1-2 voxel wide neck) is NaN.
- With smoothing, derivatives use central stencils only (one-sided ones amplify noise
  ~3x more), and the *same* normalised filter is applied to ``q`` and ``Lap q``, reading
  only voxels that have them and evaluated at every mask voxel: Gaussian
  ``S(a) = (g conv a m) / (g conv m)``, or a local least-squares polynomial fit to those
  voxels of each window (Savitzky-Golay). Away from the edge this equals smoothing ``q``
  first (shift-invariant filters commute with the stencil); at the edge, being linear,
  it keeps ``Lap q = -k^2 q`` exact, whereas differencing a renormalised smooth field
  bends the waves (a 75 % rim error on a masked homogeneous phantom, measured). Fewer
  voxels are averaged at the edge, so with noise the rim stays the noisiest part.
- Holes in the mask are edges like the outer one: hole voxels are NaN and never read
  (the filter may still average mask voxels on both sides of a small hole).
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np
import scipy.ndimage

from helmholtz_pinn.assess.stencils import check_spacing as _check_spacing
from helmholtz_pinn.assess.stencils import curl as _curl
from helmholtz_pinn.assess.stencils import fd_laplacian, once_per_dataset
from helmholtz_pinn.assess.stencils import laplacian as _laplacian
from helmholtz_pinn.assess.stencils import usable as _usable
from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from helmholtz_pinn.io.dataset import Dataset

__all__ = [
    "AHI_SIGMA",
    "CURL_SIGMA",
    "METHODS",
    "SMOOTHING_CHOICES",
    "ahi",
    "baseline_bytes",
    "baseline_settings",
    "curl_mdev",
    "default_map",
    "estimate_modulus",
    "fd_laplacian",
    "sigma_in_voxels",
]

SMOOTHING_CHOICES = ("none", "gaussian", "savgol")
METHODS = ("ahi", "curl_mdev")
# Default Gaussian widths, voxels: at -20 dB the lowest median error of G' among the widths
# that keep >= 90 % of the best contrast of the largest target (docs/defaults.md; the
# rule is re-checked by tests/assess/test_baselines.py).
AHI_SIGMA = 2.0
CURL_SIGMA = 1.5


def ahi(
    dataset: Dataset,
    *,
    smoothing: str = "none",
    sigma: float = AHI_SIGMA,
    window: int = 7,
    polyorder: int = 2,
    per_frequency: bool = False,
) -> np.ndarray:
    """Algebraic Helmholtz inversion (MDEV form) of ``u``; the equation and the mask
    handling are in the module docstring.

    Args:
      dataset: a :class:`~helmholtz_pinn.io.dataset.Dataset` (``u`` ``(F, C, *grid)``,
        ``frequency`` Hz, ``spacing`` m, ``mask``, ``rho`` kg/m^3); any object with
        these attributes works (e.g. ``u`` with NaN outside the mask).
      smoothing: ``"none"``, ``"gaussian"`` (normalised Gaussian over the spatial axes,
        standard deviation ``sigma`` voxels, truncated at 4 sigma) or ``"savgol"``
        (Savitzky-Golay along each spatial axis in turn: least-squares polynomial of
        order ``polyorder`` over the usable voxels of an odd ``window``, evaluated at
        its centre; a voxel whose window holds fewer than ``polyorder + 1`` of them is
        left as it is along that axis). Real and imaginary parts are smoothed alike.
      sigma: Gaussian width in voxels (> 0; default :data:`AHI_SIGMA`, measured); used
        only with ``"gaussian"``.
      window, polyorder: Savitzky-Golay window (odd, >= 3, <= the shortest axis) and
        order (0 <= polyorder < window); used only with ``"savgol"``.
      per_frequency: if True invert each frequency on its own (sums over components
        only) and return ``(F, *grid)``.

    Returns:
      Complex shear modulus ``mu = G' + i G''`` in Pa, shape ``grid`` (or
      ``(F, *grid)``); NaN outside the mask, where no stencil (or, smoothed, no
      neighbour) is available and where ``Lap u`` vanishes for every field.
    """
    u, valid, h = _inputs(dataset, per_frequency)
    _check_smoothing(smoothing, sigma, window, polyorder, u.shape[2:])
    smooth = (smoothing, sigma, window, polyorder)
    return _mdev(u, valid, valid, h, dataset, smooth, per_frequency)


def curl_mdev(
    dataset: Dataset,
    *,
    smoothing: str = "gaussian",
    sigma: float = CURL_SIGMA,
    window: int = 7,
    polyorder: int = 2,
    per_frequency: bool = False,
) -> np.ndarray:
    """Curl-based MDEV: the AHI/MDEV inversion of ``q = curl u`` instead of ``u``.

    Where ``mu`` is locally constant, ``mu Lap q + rho omega^2 q = 0`` holds for the curl
    of the Navier-Cauchy field: the curl removes compressional waves (``curl grad = 0``),
    which bias :func:`ahi` on vector data. Component ``c`` of ``u`` is the displacement
    along grid axis ``c`` (x, y, z), and

        q = (d_y u_z - d_z u_y,  d_z u_x - d_x u_z,  d_x u_y - d_y u_x)

    by central differences ``(u[i+1] - u[i-1]) / 2h`` only (one-sided ones gave 38-106 %
    errors in the two outer layers once differentiated again), so ``q`` lacks the mask's
    outer voxel layer: NaN there without smoothing, filled by the masked filter with it.
    3-D volumes use all three derivatives. **2-D slices** ``(nx, ny)`` of 3-D motion
    assume the through-plane derivatives vanish (``d_z = 0``: waves travel in the slice
    plane), exact only for in-plane propagation; a through-plane wave-vector component
    makes ``|Lap q|`` too small and ``|G*|`` too large. ``Lap q``, the smoothing and the
    MDEV sums over the three curl components and the frequencies are those of
    :func:`ahi`. The default smoothing (Gaussian, :data:`CURL_SIGMA` voxels, measured)
    reflects that ``Lap q`` is a third derivative of the data.

    Args:
      dataset: as for :func:`ahi`, with three components.
      smoothing: as for :func:`ahi`; default "gaussian".
      sigma: Gaussian width in voxels; default :data:`CURL_SIGMA`.
      window, polyorder: as for :func:`ahi`.
      per_frequency: as for :func:`ahi`.

    Returns:
      Complex shear modulus in Pa, shape ``grid`` (or ``(F, *grid)``), NaN outside the
      mask and where no stencil (or, smoothed, no neighbour) is available.

    Raises:
      InputError (a ValueError): if ``u`` does not have three components, or for bad arguments.
    """
    u, valid, h = _inputs(dataset, per_frequency)
    _check_smoothing(smoothing, sigma, window, polyorder, u.shape[2:])
    if u.shape[1] != 3:
        raise InputError(
            f"curl-MDEV needs three displacement components (C = 3); got C = {u.shape[1]}"
        )

    q = _curl(u, valid, h)
    q, valid_q = _usable(q, valid, valid.shape)
    smooth = (smoothing, sigma, window, polyorder)
    return _mdev(q, valid_q, valid, h, dataset, smooth, per_frequency)


@once_per_dataset
def _default_curl_mdev(dataset: Dataset) -> np.ndarray:
    return curl_mdev(dataset, per_frequency=True)


@once_per_dataset
def _default_ahi(dataset: Dataset) -> np.ndarray:
    return ahi(dataset, smoothing="gaussian", per_frequency=True)


def default_map(dataset: Dataset, method: str) -> np.ndarray:
    """``method``'s map per frequency at its default smoothing (Gaussian, :data:`AHI_SIGMA`
    or :data:`CURL_SIGMA` voxels), complex Pa ``(F, *grid)``, read-only and computed once
    per dataset: the law's prior and the fit checks read the same classical map
    (:mod:`helmholtz_pinn.assess.laws`, :mod:`helmholtz_pinn.assess.fit_checks`).
    ``method`` is one of :data:`METHODS`; raises as :func:`ahi` and :func:`curl_mdev` do."""
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    return (_default_curl_mdev if method == "curl_mdev" else _default_ahi)(dataset)


def estimate_modulus(dataset: Dataset, *, sigma: float = 1.5) -> float:
    """Robust scalar reference modulus in Pa, for nondimensionalising the PINN.

    The median over the mask of ``|mu|`` from :func:`ahi` with Gaussian smoothing of
    ``sigma`` voxels (finite voxels only; AHI reads only mask voxels, so a zero-filled or
    NaN background does not enter). A median ignores the edge voxels and noisy outliers
    that AHI produces; the value is a scale, not an accurate estimate.
    """
    mag = np.abs(ahi(dataset, smoothing="gaussian", sigma=sigma))
    vals = mag[np.isfinite(mag) & (mag > 0)]  # NaN outside the mask
    if vals.size == 0:
        raise InputError(
            "estimate_modulus: AHI gave no finite, positive modulus inside the mask; "
            "check that u is non-zero there"
        )
    return float(np.median(vals))


def sigma_in_voxels(sigma_mm: float, spacing) -> float:
    """A Gaussian width given in mm as voxels: ``sigma_mm / h`` (``h`` the voxel size in
    mm; ``spacing`` per axis in m). The filter has one width in voxels, so the voxels
    must be cubic (equal spacing on every axis)."""
    if not (isinstance(sigma_mm, numbers.Real) and math.isfinite(sigma_mm) and sigma_mm > 0):
        raise InputError(f"sigma_mm must be a finite number > 0 (mm); got {sigma_mm!r}")
    mm = _check_spacing(spacing, 3) * 1e3
    if not np.allclose(mm, mm[0], rtol=1e-6, atol=0):
        raise InputError(
            f"a width in mm needs equal voxel sizes on every axis; got {mm.tolist()} mm: "
            "give sigma= in voxels instead"
        )
    return float(sigma_mm / mm[0])


def baseline_settings(
    method: str, smoothing: str, sigma: float, window: int, spacing, *, polyorder: int = 2
) -> dict:
    """The settings of a baseline run as a JSON-ready dict (for ``metrics.json``).

    Keys: ``method``, ``smoothing``, ``sigma_voxels`` and ``sigma_mm`` (per spatial axis;
    Gaussian only, else None), ``window_voxels``, ``window_mm`` (per axis) and
    ``polyorder`` (Savitzky-Golay only, else None), ``spacing_mm``. ``spacing``: the voxel
    size per axis in m.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    _check_smoothing(smoothing, sigma, window, polyorder)
    mm = [float(x) * 1e3 for x in _check_spacing(spacing, 3)]
    gauss, savgol = smoothing == "gaussian", smoothing == "savgol"
    return {
        "method": method,
        "smoothing": smoothing,
        "sigma_voxels": float(sigma) if gauss else None,
        "sigma_mm": [float(sigma) * h for h in mm] if gauss else None,
        "window_voxels": int(window) if savgol else None,
        "window_mm": [int(window) * h for h in mm] if savgol else None,
        "polyorder": int(polyorder) if savgol else None,
        "spacing_mm": mm,
    }


def baseline_bytes(grid: tuple[int, ...], n_freq: int, n_comp: int) -> int:
    """Host bytes a baseline on ``grid`` with F = ``n_freq`` and C = ``n_comp`` needs at
    its peak, from the result to the saved files, besides its input: V x (160 F C + 400)
    for V voxels. The Laplacian, the smoothing and the sums work in complex128 on every
    field; the figures and files add a constant per voxel. Measured with tracemalloc
    (ahi and curl-mdev, no, Gaussian and Savitzky-Golay smoothing, 2-D and 3-D grids):
    at most 143 F C + 253 bytes per voxel on grids of 256^2 voxels, up to 506 at F = C = 1
    on smaller ones (docs/reliability.md)."""
    return math.prod(grid) * (160 * int(n_freq) * int(n_comp) + 400)


# --- shared pieces ---


def _inputs(dataset, per_frequency) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``u`` (zero outside the usable voxels), the usable-voxel mask, spacing (m)."""
    u = np.asarray(dataset.u)
    if u.ndim < 3:
        raise InputError(f"dataset.u must have shape (F, C, *grid); got {u.shape}")
    freq = np.asarray(dataset.frequency, dtype=float).reshape(-1)
    if freq.shape != (u.shape[0],):
        raise InputError(f"dataset.frequency must have shape ({u.shape[0]},); got {freq.shape}")
    if per_frequency not in (True, False):
        raise InputError(f"per_frequency must be True or False; got {per_frequency!r}")
    grid, mask = u.shape[2:], getattr(dataset, "mask", None)
    h = _check_spacing(dataset.spacing, len(grid))
    if h.size != len(grid):
        raise InputError(f"spacing must have {len(grid)} entries (m); got {h.tolist()}")
    u, valid = _usable(u.astype(np.complex128), np.ones(grid, bool) if mask is None else mask, grid)
    if not valid.any():
        raise InputError(f"no voxel inside the mask has finite u in every field (grid {grid})")
    return u, valid, h


def _mdev(q, valid, out, h, dataset, smooth, per_frequency) -> np.ndarray:
    """MDEV sums over fields ``q`` ``(F, J, *grid)``, usable on ``valid``, for the voxels
    ``out``. With smoothing, ``Lap q`` comes from central stencils only and the masked
    filter carries ``q`` and ``Lap q`` to the mask edge (edge stencils amplify noise)."""
    lap = _laplacian(q, valid, h, central_only=smooth[0] != "none")
    src = valid & np.all(np.isfinite(lap), axis=(0, 1))
    if not src.any():
        raise InputError(
            f"no mask voxel has the neighbours a finite-difference stencil needs (grid "
            f"{valid.shape}, {int(valid.sum())} usable voxels); the mask is too thin"
        )
    q, lap = (np.where(src, a, 0) for a in (q, lap))
    (q, done), (lap, _) = (_smooth(a, src, out, *smooth) for a in (q, lap))

    freq = np.asarray(dataset.frequency, dtype=float).reshape(-1)
    rho_w2 = float(dataset.rho) * (2.0 * math.pi * freq) ** 2  # (F,), Pa / m^2
    rho_w2 = rho_w2.reshape((-1,) + (1,) * (q.ndim - 1))
    abs_q, abs_lap = np.abs(q), np.abs(lap)
    dot = q.real * lap.real + q.imag * lap.imag
    sum_axes = (1,) if per_frequency else (0, 1)
    num, den, dot, norm = (
        np.sum(a, axis=sum_axes) for a in (rho_w2 * abs_q, abs_lap, dot, abs_q * abs_lap)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = num / den
        cos_phi = np.clip(-dot / norm, -1.0, 1.0)
    mag = np.where(done & (den > 0), mag, np.nan)
    phi = np.arccos(cos_phi)
    return mag * (np.cos(phi) + 1j * np.sin(phi))


def _check_smoothing(smoothing, sigma, window, polyorder, grid=None) -> None:
    if not isinstance(smoothing, str) or smoothing not in SMOOTHING_CHOICES:
        raise InputError(f"smoothing must be one of {SMOOTHING_CHOICES}; got {smoothing!r}")
    if smoothing == "gaussian":
        if not (isinstance(sigma, numbers.Real) and math.isfinite(sigma) and sigma > 0):
            raise InputError(f"sigma must be a finite number > 0 (voxels); got {sigma!r}")
    elif smoothing == "savgol":
        integral = isinstance(window, numbers.Integral) and not isinstance(window, bool)
        if not integral or window < 3 or window % 2 == 0:
            raise InputError(f"window must be an odd integer >= 3 (voxels); got {window!r}")
        if grid is not None and window > min(grid):
            raise InputError(f"window must be <= the shortest grid axis {min(grid)}; got {window}")
        integral = isinstance(polyorder, numbers.Integral) and not isinstance(polyorder, bool)
        if not integral or not 0 <= polyorder < window:
            raise InputError(f"polyorder must be an integer in [0, {window}); got {polyorder!r}")


def _smooth(a, src, out, smoothing, sigma, window, polyorder):
    """Masked smoothing of ``a`` ``(..., *grid)`` over the spatial axes, reading the
    ``src`` voxels only (``a`` is zero elsewhere) and evaluated at ``out`` (a superset).
    Returns ``(smoothed, done)``: ``done`` marks the voxels that got a value."""
    if smoothing == "none":
        return a, src
    ndim, lead = src.ndim, a.ndim - src.ndim
    if smoothing == "gaussian":
        sig = float(sigma)
        weight = scipy.ndimage.gaussian_filter(src.astype(float), sig, mode="constant")
        num = scipy.ndimage.gaussian_filter(a, (0.0,) * lead + (sig,) * ndim, mode="constant")
        done = out & (weight > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(done, num / weight, 0), done
    half, p = int(window) // 2, int(polyorder)
    powers = [(np.arange(-half, half + 1) / half) ** j for j in range(2 * p + 1)]
    for k in range(ndim):
        # Least-squares fit sum_j c_j t^j to the src voxels of each window; the value is
        # c_0 = sum_j G_j (sum_t a t^j), G the first row of the moment matrix's inverse.
        m = src.astype(float)
        mom = [scipy.ndimage.correlate1d(m, w, k, mode="constant") for w in powers]
        fit = out & (mom[0] > p + 0.5)
        moments = np.stack([np.stack(mom[i : i + p + 1], -1) for i in range(p + 1)], -2)
        g = np.zeros((*src.shape, p + 1))
        g[fit] = np.linalg.inv(moments[fit])[:, 0, :]
        smooth = sum(
            g[..., j] * scipy.ndimage.correlate1d(a, powers[j], lead + k, mode="constant")
            for j in range(p + 1)
        )
        a, src = np.where(fit, smooth, a), src | fit
    return a, src
