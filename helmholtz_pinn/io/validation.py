"""Validation of the arrays of a dataset (:class:`helmholtz_pinn.io.dataset.Dataset`).

Pure functions: a value in, a normalised array out, or a
:class:`~helmholtz_pinn.errors.DatasetError` with one line that names the field, what
was found (dtype and shape) and what was expected, with its unit.
"""

from __future__ import annotations

import numpy as np

from helmholtz_pinn.errors import DatasetError


def describe(a: np.ndarray) -> str:
    """``float32 (80, 100)``: dtype and shape for error messages."""
    return f"{a.dtype} {tuple(a.shape)}"


def asarray(name: str, value: object) -> np.ndarray:
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists and the like
        raise DatasetError(f"{name} must be an array; got {type(value).__name__}") from exc


def check_u(value: object) -> np.ndarray:
    u = asarray("u", value)
    expected = "complex with shape (F, C, nx, ny) or (F, C, nx, ny, nz)"
    if u.dtype.kind != "c" or u.ndim not in (4, 5):
        raise DatasetError(f"u must be {expected}; got {describe(u)}")
    if u.shape[0] < 1 or u.shape[1] < 1:
        raise DatasetError(
            f"u must have at least one frequency (F) and one component (C); got shape {u.shape}"
        )
    if min(u.shape[2:]) < 3:
        raise DatasetError(
            f"u grid {u.shape[2:]} has a dimension < 3 voxels; every grid dimension "
            "needs >= 3 voxels (store a 2-D slice as (F, C, nx, ny))"
        )
    if u.dtype not in (np.complex64, np.complex128):
        u = u.astype(np.complex128)
    return u


def fill_outside(u: np.ndarray, mask: np.ndarray, given: bool) -> np.ndarray:
    """``u`` with NaN/Inf outside the mask set to 0 (a NaN background is common in scanner
    data); NaN/Inf inside the mask is refused."""
    bad = ~np.isfinite(u)
    if not bad.any():
        return u
    inside = bad & mask
    if inside.any():
        first = tuple(int(i) for i in np.argwhere(inside)[0])
        where = "inside the mask" if given else "and no mask (leave them out with a mask)"
        raise DatasetError(
            f"u must be finite inside the mask; got {int(inside.sum())} NaN/Inf values "
            f"{where} (first at index {first}); NaN outside the mask is allowed"
        )
    return np.where(bad, 0, u).astype(u.dtype)


def real_array(name: str, value: object, expected: str) -> np.ndarray:
    a = asarray(name, value)
    if a.dtype.kind not in "iuf":
        raise DatasetError(f"{name} must be real numbers {expected}; got {describe(a)}")
    return a.astype(np.float64)


def check_positive_vector(
    name: str, value: object, length: int, symbol: str, unit: str
) -> np.ndarray:
    expected = f"with shape {symbol} = ({length},), in {unit}"
    a = real_array(name, value, expected)
    if a.shape != (length,):
        raise DatasetError(f"{name} must have shape {symbol} = ({length},); got {describe(a)}")
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise DatasetError(f"{name} must be finite and > 0 {unit}; got {a.tolist()}")
    return a


def check_grid_shape(name: str, a: np.ndarray, grid: tuple[int, ...]) -> None:
    if a.shape != grid:
        raise DatasetError(f"{name} must have the grid shape {grid}; got {describe(a)}")


def check_mask(value: object, grid: tuple[int, ...]) -> np.ndarray:
    if value is None:
        return np.ones(grid, dtype=bool)
    a = asarray("mask", value)
    check_grid_shape("mask", a, grid)
    if a.dtype.kind != "b":
        if a.dtype.kind not in "iuf" or not np.isin(a, (0, 1)).all():
            raise DatasetError(
                f"mask must be boolean (or only 0/1 values); got {describe(a)} "
                f"with values other than 0 and 1"
            )
        a = a.astype(bool)
    if not a.any():
        raise DatasetError(f"mask selects no voxel (all false) on grid {grid}")
    return a


def check_mu(value: object, n_freq: int, grid: tuple[int, ...]) -> np.ndarray | None:
    if value is None:
        return None
    a = asarray("mu", value)
    if a.dtype.kind not in "iufc":
        raise DatasetError(f"mu must be complex numbers in Pa; got {describe(a)}")
    if a.shape not in (grid, (n_freq, *grid)):
        raise DatasetError(
            f"mu must have shape grid {grid} or (F, *grid) {(n_freq, *grid)}; got {describe(a)}"
        )
    a = a.astype(np.complex128)
    if not np.isfinite(a).all():
        raise DatasetError(f"mu must be finite; got {int((~np.isfinite(a)).sum())} NaN/Inf values")
    return a


def check_regions(value: object, grid: tuple[int, ...]) -> np.ndarray | None:
    if value is None:
        return None
    a = asarray("regions", value)
    check_grid_shape("regions", a, grid)
    integer = a.dtype.kind in "biu" or (
        a.dtype.kind == "f" and np.isfinite(a).all() and (a == np.round(a)).all()
    )
    if not integer:
        raise DatasetError(
            f"regions must be integer labels; got {describe(a)} with non-integer values"
        )
    a = a.astype(np.int64)
    if (a < 0).any():
        raise DatasetError(
            f"regions must be labels >= 0 (0 unlabelled, 1 background, 2.. targets); got "
            f"{int(a.min())} at {int((a < 0).sum())} voxel(s)"
        )
    return a


def check_rho(value: object) -> float:
    a = asarray("rho", value)
    if a.shape != () or a.dtype.kind not in "iuf":
        raise DatasetError(f"rho must be a real scalar in kg/m^3; got {describe(a)}")
    rho = float(a)
    if not (np.isfinite(rho) and rho > 0):
        raise DatasetError(f"rho must be finite and > 0 kg/m^3; got {rho}")
    return rho


def check_affine(value: object) -> np.ndarray | None:
    if value is None:
        return None
    a = real_array("affine", value, "(4, 4) in mm")
    ok = a.shape == (4, 4) and np.isfinite(a).all() and np.array_equal(a[3], [0, 0, 0, 1])
    if not ok or abs(np.linalg.det(a[:3, :3])) < 1e-12:
        raise DatasetError(
            f"affine must be a finite (4, 4) voxel-to-world matrix in mm with last row "
            f"[0, 0, 0, 1] and independent columns; got {describe(a)}"
        )
    return a
