"""Sparse direct solves of the finite-element systems of :mod:`helmholtz_pinn.forward.elastic`.

A x = b with A complex symmetric (the time-harmonic elastic operator), by SuperLU in a
geometric nested-dissection order. ``precision="mixed"`` factorises A in complex64
(half the memory of the factors, which dominate the peak) and refines in complex128:
    x_0 = 0,  r_k = b - A x_k,  x_{k+1} = x_k + LU_32^{-1} r_k,
until ||r_k|| <= ``MIXED_TOL`` ||b||; it converges while cond(A) times the float32
rounding stays below 1, and raises otherwise (nothing is silently returned).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg

from helmholtz_pinn.errors import InputError

MIXED_TOL = 1e-10  # relative residual of a mixed-precision solve
MIXED_STEPS = 30  # refinement steps before giving up
PRECISIONS = ("double", "mixed")


def nested_dissection(points: np.ndarray, leaf: int = 256) -> np.ndarray:
    """Fill-reducing order of the dofs at ``points`` (3, N) of a tensor-product mesh.

    Coordinates are ranked per axis; P2 dofs on even ranks lie on vertex planes, which
    separate the dofs on either side. Boxes of rank space are halved across their longest
    axis recursively, separator last (geometric nested dissection; a valid permutation,
    if a poorer one, on any mesh)."""
    rank = np.stack([np.unique(c, return_inverse=True)[1] for c in points])
    out: list[np.ndarray] = []

    def split(sel: np.ndarray) -> None:
        r = rank[:, sel]
        lo, hi = r.min(1), r.max(1)
        ax = int(np.argmax(hi - lo))
        m = (lo[ax] + hi[ax]) // 2 // 2 * 2  # an even rank: a vertex plane
        m += 2 if m <= lo[ax] else 0
        if sel.size <= leaf or not lo[ax] < m < hi[ax]:
            out.append(sel)
            return
        split(sel[r[ax] < m])
        split(sel[r[ax] > m])
        out.append(sel[r[ax] == m])

    split(np.arange(points.shape[1]))
    return np.concatenate(out)


def check_precision(precision: str) -> None:
    """Raise a ValueError naming ``precision`` unless it is one of :data:`PRECISIONS`."""
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {PRECISIONS}; got {precision!r}")


def solve(matrix: sparse.csc_matrix, rhs: np.ndarray, precision: str = "double") -> np.ndarray:
    """x (complex128) with ``matrix @ x = rhs``, the matrix already in a fill-reducing
    order; SuperLU in symmetric mode (diagonal pivots preferred), factorised in complex128
    ("double") or complex64 with refinement ("mixed", module doc)."""
    check_precision(precision)
    options = {"permc_spec": "NATURAL", "diag_pivot_thresh": 0.1}
    symmetric = {"SymmetricMode": True}
    if precision == "double":
        return splinalg.splu(matrix, **options, options=symmetric).solve(rhs)
    lu = splinalg.splu(matrix.astype(np.complex64), **options, options=symmetric)
    x, goal = np.zeros_like(rhs), MIXED_TOL * np.linalg.norm(rhs)
    for _ in range(MIXED_STEPS):
        r = rhs - matrix @ x
        if np.linalg.norm(r) <= goal:
            return x
        x = x + lu.solve(r.astype(np.complex64))
    raise InputError(
        f"mixed-precision refinement did not reach a relative residual of {MIXED_TOL:g} "
        f"in {MIXED_STEPS} steps (the system is too ill-conditioned for a complex64 "
        "factorisation); use precision='double'"
    )
