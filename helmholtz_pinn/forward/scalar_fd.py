"""Finite-difference solver of the scalar heterogeneous Helmholtz equation in 2-D.

    div(mu grad u) + rho omega^2 u = f

(``mu`` complex shear modulus in Pa, ``rho`` density in kg/m^3, ``omega`` in rad/s,
``f`` a body-force density). Second-order 5-point stencil on a node grid with ``mu``
averaged onto the cell faces by the harmonic mean; one sparse LU factorisation serves
every right-hand side. :func:`solve_helmholtz` takes Dirichlet values on the outer ring
of nodes; :func:`solve_pml` surrounds the problem by a perfectly matched layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg
from threadpoolctl import threadpool_limits

from helmholtz_pinn.errors import InputError


def spacing_pair(spacing: float | Sequence[float]) -> tuple[float, float]:
    """``(hx, hy)`` in m from one number or a pair; both must be positive."""
    hx, hy = np.broadcast_to(np.asarray(spacing, dtype=float), (2,))
    if not (hx > 0 and hy > 0):
        raise InputError(f"spacing must be positive (m); got {spacing!r}")
    return float(hx), float(hy)


def _harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Face modulus ``2ab / (a + b)``: exact flux continuity across a material jump."""
    return 2.0 * a * b / (a + b)


def _interior_operator(mu_x: np.ndarray, mu_y: np.ndarray, k2: np.ndarray, hx: float, hy: float):
    """Rows of ``d/dx(mu_x du/dx) + d/dy(mu_y du/dy) + k2 u`` for the interior nodes,
    columns for all nodes (CSC, shape ``(n_interior, nx * ny)``).

    5-point stencil; the coefficients are averaged onto the cell faces by the harmonic
    mean of the two adjacent nodes. ``mu_x = mu_y = mu`` is ``div(mu grad u) + k2 u``.
    """
    nx, ny = mu_x.shape
    node = np.arange(nx * ny).reshape(nx, ny)
    row = np.arange((nx - 2) * (ny - 2)).reshape(nx - 2, ny - 2)
    fx = _harmonic_mean(mu_x[:-1, :], mu_x[1:, :]) / hx**2  # face (i + 1/2, j)
    fy = _harmonic_mean(mu_y[:, :-1], mu_y[:, 1:]) / hy**2  # face (i, j + 1/2)
    east, west = fx[1:, 1:-1], fx[:-1, 1:-1]
    north, south = fy[1:-1, 1:], fy[1:-1, :-1]
    centre = k2[1:-1, 1:-1] - (east + west + north + south)
    cols = [node[1:-1, 1:-1], node[2:, 1:-1], node[:-2, 1:-1], node[1:-1, 2:], node[1:-1, :-2]]
    vals = np.concatenate([v.ravel() for v in (centre, east, west, north, south)])
    ij = (np.tile(row.ravel(), 5), np.concatenate([c.ravel() for c in cols]))
    return sparse.csc_matrix((vals, ij), shape=(row.size, nx * ny))


def _solve(mu_x, mu_y, k2, hx: float, hy: float, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Dirichlet problem for :func:`_interior_operator`: ``f`` is ``(K, nx, ny)``, the
    ring of ``g`` ``(nx, ny)`` the boundary values; one LU factorisation for all K."""
    grid = g.shape
    ring = np.ones(grid, bool)
    ring[1:-1, 1:-1] = False
    op = _interior_operator(mu_x, mu_y, k2, hx, hy)
    a_ii, a_ib = op[:, ~ring.ravel()], op[:, ring.ravel()]
    rhs = f[:, 1:-1, 1:-1].reshape(len(f), -1).T - (a_ib @ g[ring])[:, None]
    # One BLAS thread for the sparse LU: SuperLU calls BLAS on small dense blocks where
    # threads only add synchronisation, and threaded OpenBLAS busy-waits when other
    # processes hold the cores (four-target: 258 s instead of 4 s on a loaded 2-core box).
    with threadpool_limits(1, user_api="blas"):
        u_int = splinalg.splu(a_ii.tocsc()).solve(np.ascontiguousarray(rhs))
    u = np.broadcast_to(g, f.shape).copy()
    u[:, 1:-1, 1:-1] = u_int.T.reshape(len(f), grid[0] - 2, grid[1] - 2)
    return u


def solve_helmholtz(
    mu: np.ndarray,
    rho: float | np.ndarray,
    omega: float,
    spacing: float | Sequence[float],
    source: np.ndarray | None = None,
    dirichlet: np.ndarray | None = None,
) -> np.ndarray:
    """Solve ``div(mu grad u) + rho omega^2 u = source`` on a 2-D node grid.

    Finite differences, second order: 5-point stencil with ``mu`` averaged onto the
    cell faces by the harmonic mean ``2 mu_a mu_b / (mu_a + mu_b)`` (the flux-continuous
    choice at material jumps; second order where ``mu`` is smooth). The outer ring of
    nodes is a Dirichlet boundary: ``u = dirichlet`` there, or ``u = 0`` when it is None.
    One sparse LU factorisation (``scipy.sparse.linalg.splu``) serves every right-hand side.

    Args:
      mu: complex shear modulus at the nodes, Pa, shape ``(nx, ny)``.
      rho: density, kg/m^3, scalar or ``(nx, ny)`` (complex values act as damping).
      omega: angular frequency, rad/s.
      spacing: node spacing ``(hx, hy)`` (or one number), m.
      source: right-hand side ``f`` (N/m^3 per unit displacement), ``(nx, ny)`` or a
        stack ``(K, nx, ny)`` of independent right-hand sides; None means zero.
      dirichlet: ``(nx, ny)`` array whose outer ring gives the boundary values (the
        interior is ignored); None means ``u = 0`` on the ring.

    Returns:
      complex128 ``u`` with the shape of ``source`` (``(nx, ny)`` when it is None).
    """
    mu = np.asarray(mu, dtype=complex)
    if mu.ndim != 2 or min(mu.shape) < 3:
        raise InputError(f"mu must be a 2-D grid of at least 3x3 nodes; got shape {mu.shape}")
    hx, hy = spacing_pair(spacing)
    grid = mu.shape
    k2 = np.broadcast_to(np.asarray(rho, dtype=complex) * omega**2, grid)
    f = np.zeros(grid, complex) if source is None else np.asarray(source, dtype=complex)
    if f.shape[-2:] != grid or f.ndim not in (2, 3):
        raise InputError(f"source must have shape {grid} or (K, *{grid}); got {f.shape}")
    g = np.zeros(grid, complex) if dirichlet is None else np.asarray(dirichlet, dtype=complex)
    if g.shape != grid:
        raise InputError(f"dirichlet must have shape {grid}; got {g.shape}")

    return _solve(mu, mu, k2, hx, hy, f.reshape(-1, *grid), g).reshape(f.shape)


def _ramp(n: int, width: int) -> np.ndarray:
    """``(d / W)^2`` on ``n`` nodes: ``d`` = distance of a node centre into an absorbing
    layer of ``W = width`` nodes at each end (0 on the ``n - 2 width`` nodes between)."""
    c = np.arange(n) + 0.5
    return (np.maximum(width - c, c - (n - width)).clip(min=0) / width) ** 2


def solve_pml(
    mu: np.ndarray,
    rho: float | np.ndarray,
    omega: float,
    spacing: tuple[float, float],
    source: np.ndarray,
    width: int,
    strength: float,
) -> np.ndarray:
    """Solve ``div(mu grad u) + rho omega^2 u = source`` inside a perfectly matched layer.

    The outer ``width`` nodes along every edge are the layer: the coordinate normal to
    the edge is stretched by ``s = 1 - i alpha``, ``alpha`` rising quadratically from 0
    to ``strength``, i.e. ``d/dx(mu s_y/s_x du/dx) + d/dy(mu s_x/s_y du/dy) +
    rho omega^2 s_x s_y u = s_x s_y f``, which absorbs outgoing waves without damping
    waves that run along it; ``u = 0`` on the outer ring of nodes.

    Args:
      mu: complex shear modulus at the nodes, Pa, ``(nx, ny)``, layer included.
      rho: density, kg/m^3, scalar or ``(nx, ny)`` (complex values act as damping).
      omega: angular frequency, rad/s.
      spacing: node spacing ``(hx, hy)``, m.
      source: a stack ``(K, nx, ny)`` of right-hand sides ``f``, N/m^3.
      width: layer width in nodes. strength: ``alpha`` at the outer edge.

    Returns:
      complex128 ``u`` of shape ``(K, nx, ny)``.
    """
    sx = 1 - 1j * strength * _ramp(mu.shape[0], width)[:, None]
    sy = 1 - 1j * strength * _ramp(mu.shape[1], width)[None, :]
    k2 = rho * omega**2 * sx * sy
    return _solve(
        mu * sy / sx, mu * sx / sy, k2, *spacing, source * (sx * sy), np.zeros(mu.shape, complex)
    )


def line_source(mu: np.ndarray, k: np.ndarray, spacing, edge: str, row: int) -> np.ndarray:
    """Line force on node line ``row`` from ``edge`` (``top``: x = row, ``left``: y = row,
    ``bottom``/``right`` mirrored). Strength ``-2 i k mu / h`` per node (``k`` the in-plane
    wavenumber, rad/m, at every node) launches plane waves of unit amplitude each way in a
    uniform medium."""
    axis = 0 if edge in ("top", "bottom") else 1
    index = row if edge in ("top", "left") else mu.shape[axis] - 1 - row
    line = -2j * np.take(k * mu, index, axis=axis) / spacing[axis]
    f = np.zeros(mu.shape, complex)
    if axis == 0:
        f[index, :] = line
    else:
        f[:, index] = line
    return f


def sample_centres(u: np.ndarray, factor: int) -> np.ndarray:
    """Bilinear value at the coarse voxel centres of a field on ``factor``-refined voxel
    centres (the centre lies between fine nodes ``lo`` and ``hi`` of each block)."""
    lo, hi = (factor - 1) // 2, factor // 2
    return 0.25 * (
        u[..., lo::factor, lo::factor]
        + u[..., lo::factor, hi::factor]
        + u[..., hi::factor, lo::factor]
        + u[..., hi::factor, hi::factor]
    )
