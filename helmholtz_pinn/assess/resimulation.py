"""Re-simulation of a modulus map: the measured wave that the map predicts, and its misfit.

For each frequency f and displacement component c, the scalar heterogeneous Helmholtz
problem

    div(mu_f grad u) + rho omega_f^2 u = 0     inside the mask,   u = u_measured on its rim

(``mu_f`` the map's complex modulus at f in Pa, ``rho`` kg/m^3, ``omega_f = 2 pi f``) is
solved by finite differences on the voxel grid (m per axis; anisotropic voxels are fine).
The unknowns are the *interior* voxels (:func:`interior`: usable mask voxels, finite u in
every field, whose 2 d axis neighbours are usable); the other usable voxels, the mask's rim
one voxel thick, hold the measured u (Dirichlet). One sparse LU factorisation per frequency
(``scipy.sparse.linalg.splu``, single precision) serves every component.

Discretisation, second order: the 2 d + 1 point stencil with ``mu`` averaged onto the faces
by the harmonic mean (flux-continuous at material jumps), and the mass term
``rho omega^2 (u + beta sum_k delta_k^2 u)`` (``delta_k^2`` the second difference along axis
k, ``beta`` = :data:`BETA`): the three-point second difference reads a plane wave's
k^2 low by ``(k h)^2 / 12`` along an axis (a modulus 5 % high at 8 voxels per wavelength),
and ``beta`` cancels that on average over directions (at most a quarter of it is left in
2-D, 40 % along an axis in 3-D). On the library's scalar phantoms the true modulus then
reproduces the data to 0.1-0.2 % where the plain stencil left 1-3 % (docs/reliability.md).

The misfit of the simulated ``u_sim`` against the measured ``u`` over the interior,

    m_f = sqrt( sum_c sum_x |u_sim - u|^2 / sum_c sum_x |u|^2 )        (a fraction),

is what :func:`misfit` returns. A map that is off (a whole map 30 % low, a region fallen
towards 0) predicts a wave that runs out of phase with the data. The scalar equation is
exact only for pure shear waves; on three-component (Navier) motion the compressional part
and the grad(mu) terms of the elastic equation are not in it, so even the true modulus
leaves a misfit there, and the scalar model prefers a stiffer map. That is why a map is
judged against a classical map under this same model (``fit_checks``' ``resimulation``).
"""

from __future__ import annotations

import itertools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg
from threadpoolctl import threadpool_limits

from helmholtz_pinn.assess.metrics import per_frequency
from helmholtz_pinn.assess.stencils import check_spacing, usable
from helmholtz_pinn.errors import InputError

if TYPE_CHECKING:
    from helmholtz_pinn.io.dataset import Dataset

__all__ = ["BETA", "TILE", "interior", "misfit", "resimulate", "tiles"]

# The mass term's weight on the second differences per grid dimension: 1/12 times the
# mean over directions of sum_k n_k^4 (3/4 in 2-D, 3/5 in 3-D), n the unit wave vector.
BETA = {2: 1 / 16, 3: 1 / 20}
# The most voxels of a volume :func:`misfit` solves at once (:func:`tiles`; five times as
# many on a 2-D grid, whose LU fills in less): the LU's cost grows faster than the voxels
# (measured on one core: 0.23 s for 40 x 50 x 10, 2.0 s for 80 x 100 x 10 at once).
TILE = 20_000


def interior(valid: np.ndarray) -> np.ndarray:
    """The voxels of ``valid`` (bool ``grid``) whose 2 d axis neighbours are all in
    ``valid`` (a voxel on the grid's edge is not): the unknowns of :func:`resimulate`."""
    valid = np.asarray(valid, bool)
    inner = valid.copy()
    for k in range(valid.ndim):
        if valid.shape[k] < 3:
            return np.zeros_like(valid)
        body, ahead, behind = ([slice(None)] * valid.ndim for _ in range(3))
        body[k], ahead[k], behind[k] = slice(1, -1), slice(2, None), slice(None, -2)
        near = np.zeros_like(valid)
        near[tuple(body)] = valid[tuple(ahead)] & valid[tuple(behind)]
        inner &= near
    return inner


def _face_modulus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Harmonic mean ``2ab / (a + b)``, Pa; 0 where ``a + b`` is 0."""
    s = a + b
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s != 0, 2.0 * a * b / np.where(s != 0, s, 1.0), 0.0)


def _operator(mu: np.ndarray, k2: float, inner: np.ndarray, h: np.ndarray):
    """``(A_ii, A)``: the rows of ``div(mu grad u) + k2 (u + beta sum_k delta_k^2 u)`` at the
    ``inner`` voxels, with the columns of the inner voxels (CSC, square) and of the whole
    grid (CSR, to move the rim's values to the right-hand side); ``mu`` Pa on the grid,
    ``k2 = rho omega^2`` (Pa / m^2), ``h`` m per axis."""
    grid = inner.shape
    flat = np.flatnonzero(inner)
    strides = np.cumprod((1,) + grid[::-1])[:-1][::-1]  # C order
    m, row = mu.reshape(-1), np.arange(flat.size)
    rows, cols, vals = [row], [flat], []
    centre = np.full(flat.size, k2, complex)
    for k, hk in enumerate(h):
        for step in (strides[k], -strides[k]):
            a = _face_modulus(m[flat], m[flat + step]) / hk**2 + BETA[len(h)] * k2
            rows.append(row)
            cols.append(flat + step)
            vals.append(a)
            centre -= a
    vals.insert(0, centre)
    full = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(flat.size, math.prod(grid)),
    )
    return full[:, flat].tocsc(), full


def resimulate(
    mu: np.ndarray,
    u: np.ndarray,
    mask: np.ndarray,
    frequency,
    spacing,
    rho: float = 1000.0,
) -> np.ndarray:
    """The wave the modulus ``mu`` predicts from the measured ``u`` on the mask's rim.

    Solves ``div(mu_f grad u) + rho omega_f^2 u = 0`` at the :func:`interior` voxels for
    each frequency f and component c with ``u`` = the data on the other usable voxels
    (the discretisation is in the module docstring).

    Args:
      mu: complex modulus, Pa, ``grid`` (one map for every frequency) or ``(F, *grid)``.
        Non-finite values inside the mask are replaced by the map's median there.
      u: measured displacement ``(F, C, *grid)`` complex, any unit; a 2-D or 3-D grid.
      mask: bool ``grid``; frequency: ``(F,)`` Hz; spacing: ``(ndim,)`` m; rho: kg/m^3.

    Returns:
      complex128 ``(F, C, *grid)``: the simulated field at the interior voxels (NaN at a
      frequency whose map has no finite value or whose system is singular), the data on
      the rest of the usable voxels, NaN elsewhere.
    """
    u = np.asarray(u)
    if u.ndim not in (4, 5):
        raise InputError(f"u must have shape (F, C, *grid) with a 2-D or 3-D grid; got {u.shape}")
    grid = u.shape[2:]
    h = check_spacing(spacing, len(grid))
    if h.size != len(grid):
        raise InputError(f"spacing must have {len(grid)} entries (m); got {h.tolist()}")
    freq = np.asarray(frequency, float).reshape(-1)
    if freq.shape != (u.shape[0],):
        raise InputError(f"frequency must have shape ({u.shape[0]},); got {freq.shape}")
    maps = per_frequency(np.asarray(mu, complex), grid, "mu")
    if len(maps) not in (1, freq.size):
        raise InputError(f"mu must have shape {grid} or ({freq.size}, *{grid}); got {maps.shape}")
    filled, valid = usable(u.astype(np.complex128), mask, grid)
    inner = interior(valid)
    out = np.where(valid, filled, np.nan + 0j)
    flat = np.flatnonzero(inner)
    if not flat.size:
        return out
    for i, f in enumerate(freq):
        m = _filled(maps[min(i, len(maps) - 1)], valid)
        field = out[i].reshape(u.shape[1], -1)
        if not np.isfinite(m).all():  # no finite map: nothing to simulate
            field[:, flat] = np.nan
            continue
        a_ii, full = _operator(m, float(rho) * (2 * math.pi * f) ** 2, inner, h)
        g = filled[i].reshape(u.shape[1], -1).T.copy()  # (voxels, C)
        g[flat] = 0.0
        rhs = -(full @ g)
        scale = np.abs(rhs).max() or 1.0  # single precision: keep the right-hand side O(1)
        # One BLAS thread, as forward.scalar_fd: SuperLU's dense blocks are small.
        with threadpool_limits(1, user_api="blas"):
            try:
                lu = splinalg.splu(
                    a_ii.astype(np.complex64),
                    permc_spec="MMD_AT_PLUS_A",  # the structure is symmetric: less fill
                    diag_pivot_thresh=0.0,
                    options=dict(SymmetricMode=True),
                )
            except RuntimeError:  # exactly singular (a resonance of this map): no wave
                field[:, flat] = np.nan
                continue
            sol = lu.solve(np.ascontiguousarray(rhs / scale, dtype=np.complex64)) * scale
        field[:, flat] = sol.T
    return out


def _filled(mu: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``mu`` with its non-finite voxels inside ``valid`` set to its median there (Re and
    Im apart); 0 outside. A map with no finite value there stays NaN."""
    vals = mu[valid]
    ok = np.isfinite(vals)
    fill = np.median(vals[ok].real) + 1j * np.median(vals[ok].imag) if ok.any() else np.nan
    return np.where(valid, np.where(np.isfinite(mu), mu, fill), 0.0)


def tiles(grid: tuple[int, ...], limit: int) -> list[tuple[slice, ...]]:
    """Boxes of ``grid`` of at most ``limit`` voxels (where 3 voxels per axis allow it)
    whose interiors (all but their outer voxel layer) partition the grid's interior:
    neighbouring boxes overlap by two voxels. The longest box side is halved until they fit."""
    counts = [1] * len(grid)

    def side(k: int) -> int:
        return -(-(grid[k] - 2) // counts[k]) + 2

    while math.prod(side(k) for k in range(len(grid))) > limit:
        k = max(range(len(grid)), key=side)
        if side(k) <= 3:
            break
        counts[k] += 1
    axes = []
    for k, n in enumerate(grid):
        step = side(k) - 2
        axes.append([slice(a, min(a + step + 2, n)) for a in range(0, max(n - 2, 1), step)])
    return [tuple(box) for box in itertools.product(*axes)]


def misfit(mu: np.ndarray, dataset: Dataset) -> np.ndarray:
    """Relative misfit per frequency, ``(F,)`` fractions, of the wave that ``mu`` (Pa,
    ``grid`` or ``(F, *grid)``) predicts (:func:`resimulate`) against the measured one
    over the interior voxels, components together (module docstring); NaN where there is
    no interior voxel or no finite map. Volumes larger than :data:`TILE` voxels (2-D grids
    larger than five times that) are solved in boxes (:func:`tiles`), each with the data on
    its own outer layer: the cost grows with the voxels, not faster (80 x 100 x 10 voxels:
    about 0.7 s of one core per map and frequency), and the boxes are solved at once on
    the machine's cores."""
    u = np.asarray(dataset.u)
    peak = np.nanmax(np.abs(u)) if np.isfinite(u).any() else 0.0
    u = u / peak if peak > 0 else u  # the misfit is blind to u's unit
    grid, mask = u.shape[2:], np.asarray(dataset.mask, bool)
    maps = per_frequency(np.asarray(mu, complex), grid, "mu")

    def box_sums(box):
        sub = u[(slice(None), slice(None), *box)]
        _, valid = usable(sub, mask[box], sub.shape[2:])
        inner = interior(valid)
        if not inner.any():
            return 0.0, 0.0
        sim = resimulate(
            maps[(slice(None), *box)], sub, mask[box], dataset.frequency, dataset.spacing,
            dataset.rho,
        )  # fmt: skip
        data = sub[:, :, inner].astype(np.complex128)
        err = np.sum(np.abs(sim[:, :, inner] - data) ** 2, axis=(1, 2))
        return err, np.sum(np.abs(data) ** 2, axis=(1, 2))

    boxes = tiles(grid, TILE if len(grid) == 3 else 5 * TILE)
    # SuperLU releases the GIL: the boxes are solved on the free cores, summed in order.
    workers = min(len(boxes), os.cpu_count() or 1)
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        sums = list(pool.map(box_sums, boxes))
    err = sum((e for e, _ in sums), np.zeros(u.shape[0]))
    power = sum((p for _, p in sums), np.zeros(u.shape[0]))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(power > 0, np.sqrt(err / power), np.nan)
