"""Wave-field datasets: the canonical ``.npz`` format of ``shared/data-format.md``.

A dataset holds the first-harmonic displacement ``u`` (complex, ``(F, C, *grid)``),
the drive ``frequency`` (Hz, ``(F,)``), the voxel ``spacing`` (m, ``(ndim,)``), an
optional ``mask``, optional ground truth ``mu`` (complex Pa), ``regions`` and ``rho``
(kg/m^3).

``Dataset(...)`` validates and normalises its arrays; ``load`` and ``save`` read and
write the ``.npz`` file. Every problem raises :class:`DatasetError` with one line that
names the key, what was found and what was expected.
"""

from __future__ import annotations

import dataclasses
import zipfile
import zlib
from pathlib import Path

import numpy as np

from helmholtz_pinn.errors import DatasetError

REQUIRED_KEYS = ("u", "frequency", "spacing")
OPTIONAL_KEYS = ("mask", "mu", "regions", "rho")
_CONVERTIBLE = (".mat", ".nii", ".nii.gz", ".h5", ".hdf5")
# What np.load / NpzFile raise on damaged files (bad zip structure, bad .npy header,
# unsupported compression flags, short reads).
_UNREADABLE = (
    zipfile.BadZipFile,
    ValueError,
    OSError,
    EOFError,
    zlib.error,
    KeyError,
    NotImplementedError,
    SyntaxError,
    TypeError,
    OverflowError,
    RuntimeError,  # e.g. "File is encrypted" from a damaged zip flag
)


__all__ = ["Dataset", "DatasetError", "load", "save", "z_slices"]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One MRE acquisition (validated on construction).

    Attributes:
      u: complex displacement, shape ``(F, C, *grid)``, any length unit
        (complex64 or complex128, kept as given).
      frequency: drive frequency of each field, Hz, shape ``(F,)``, > 0 (float64).
      spacing: voxel size, m, shape ``(ndim,)``, > 0 (float64).
      mask: voxels to fit, bool, shape ``grid``; None means all voxels. NaN/Inf in
        ``u`` outside the mask is set to 0; inside it is refused.
      mu: ground-truth complex shear modulus, Pa, shape ``grid`` or ``(F, *grid)``,
        or None (complex128).
      regions: integer labels (1 = background, 2.. = targets), shape ``grid``, or
        None (int64).
      rho: density, kg/m^3, > 0.

    Raises:
      DatasetError: if any field is malformed; the message names the field.
    """

    u: np.ndarray
    frequency: np.ndarray
    spacing: np.ndarray
    mask: np.ndarray | None = None
    mu: np.ndarray | None = None
    regions: np.ndarray | None = None
    rho: float = 1000.0

    def __post_init__(self) -> None:
        u = _check_u(self.u)
        grid = u.shape[2:]
        fields = {
            "u": u,
            "frequency": _check_positive_vector(
                "frequency", self.frequency, u.shape[0], "(F,)", "Hz"
            ),
            "spacing": _check_positive_vector("spacing", self.spacing, len(grid), "(ndim,)", "m"),
            "mask": _check_mask(self.mask, grid),
            "mu": _check_mu(self.mu, u.shape[0], grid),
            "regions": _check_regions(self.regions, grid),
            "rho": _check_rho(self.rho),
        }
        fields["u"] = _fill_outside(u, fields["mask"], self.mask is not None)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(self.u.shape[2:])

    @property
    def ndim(self) -> int:
        return self.u.ndim - 2

    @property
    def n_freq(self) -> int:
        return self.u.shape[0]

    @property
    def n_comp(self) -> int:
        return self.u.shape[1]


# --- validation helpers (pure: value in, normalised array out or DatasetError) ---


def _describe(a: np.ndarray) -> str:
    """``float32 (80, 100)``: dtype and shape for error messages."""
    return f"{a.dtype} {tuple(a.shape)}"


def _asarray(name: str, value: object) -> np.ndarray:
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists and the like
        raise DatasetError(f"{name} must be an array; got {type(value).__name__}") from exc


def _check_u(value: object) -> np.ndarray:
    u = _asarray("u", value)
    expected = "complex with shape (F, C, nx, ny) or (F, C, nx, ny, nz)"
    if u.dtype.kind != "c" or u.ndim not in (4, 5):
        raise DatasetError(f"u must be {expected}; got {_describe(u)}")
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


def _fill_outside(u: np.ndarray, mask: np.ndarray, given: bool) -> np.ndarray:
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


def _real_array(name: str, value: object, expected: str) -> np.ndarray:
    a = _asarray(name, value)
    if a.dtype.kind not in "iuf":
        raise DatasetError(f"{name} must be real numbers {expected}; got {_describe(a)}")
    return a.astype(np.float64)


def _check_positive_vector(
    name: str, value: object, length: int, symbol: str, unit: str
) -> np.ndarray:
    expected = f"with shape {symbol} = ({length},), in {unit}"
    a = _real_array(name, value, expected)
    if a.shape != (length,):
        raise DatasetError(f"{name} must have shape {symbol} = ({length},); got {_describe(a)}")
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise DatasetError(f"{name} must be finite and > 0 {unit}; got {a.tolist()}")
    return a


def _check_grid_shape(name: str, a: np.ndarray, grid: tuple[int, ...]) -> None:
    if a.shape != grid:
        raise DatasetError(f"{name} must have the grid shape {grid}; got {_describe(a)}")


def _check_mask(value: object, grid: tuple[int, ...]) -> np.ndarray:
    if value is None:
        return np.ones(grid, dtype=bool)
    a = _asarray("mask", value)
    _check_grid_shape("mask", a, grid)
    if a.dtype.kind != "b":
        if a.dtype.kind not in "iuf" or not np.isin(a, (0, 1)).all():
            raise DatasetError(
                f"mask must be boolean (or only 0/1 values); got {_describe(a)} "
                f"with values other than 0 and 1"
            )
        a = a.astype(bool)
    if not a.any():
        raise DatasetError(f"mask selects no voxel (all false) on grid {grid}")
    return a


def _check_mu(value: object, n_freq: int, grid: tuple[int, ...]) -> np.ndarray | None:
    if value is None:
        return None
    a = _asarray("mu", value)
    if a.dtype.kind not in "iufc":
        raise DatasetError(f"mu must be complex numbers in Pa; got {_describe(a)}")
    if a.shape not in (grid, (n_freq, *grid)):
        raise DatasetError(
            f"mu must have shape grid {grid} or (F, *grid) {(n_freq, *grid)}; got {_describe(a)}"
        )
    a = a.astype(np.complex128)
    if not np.isfinite(a).all():
        raise DatasetError(f"mu must be finite; got {int((~np.isfinite(a)).sum())} NaN/Inf values")
    return a


def _check_regions(value: object, grid: tuple[int, ...]) -> np.ndarray | None:
    if value is None:
        return None
    a = _asarray("regions", value)
    _check_grid_shape("regions", a, grid)
    if a.dtype.kind in "biu":
        return a.astype(np.int64)
    if a.dtype.kind == "f" and np.isfinite(a).all() and (a == np.round(a)).all():
        return a.astype(np.int64)
    raise DatasetError(
        f"regions must be integer labels; got {_describe(a)} with non-integer values"
    )


def _check_rho(value: object) -> float:
    a = _asarray("rho", value)
    if a.shape != () or a.dtype.kind not in "iuf":
        raise DatasetError(f"rho must be a real scalar in kg/m^3; got {_describe(a)}")
    rho = float(a)
    if not (np.isfinite(rho) and rho > 0):
        raise DatasetError(f"rho must be finite and > 0 kg/m^3; got {rho}")
    return rho


# --- files ---


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, read eagerly; file problems -> DatasetError."""
    try:
        npz = np.load(path, allow_pickle=False)
    except _UNREADABLE as exc:
        raise DatasetError(
            f"{path} is not a readable .npz file (corrupt, truncated or another format?): {exc}"
        ) from exc
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise DatasetError(f"{path} holds a single .npy array, not an .npz archive")
    arrays: dict[str, np.ndarray] = {}
    with npz:
        for key in npz.files:
            try:
                arrays[key] = npz[key]
            except ValueError as exc:
                if "pickle" in str(exc):
                    raise DatasetError(
                        f"{path}: key {key!r} holds a Python object array; store "
                        "plain numeric arrays (objects are not loaded, "
                        "allow_pickle=False)"
                    ) from exc
                raise _corrupt(path, key, exc) from exc
            except _UNREADABLE as exc:
                raise _corrupt(path, key, exc) from exc
    return arrays


def _corrupt(path: Path, key: str, exc: Exception) -> DatasetError:
    return DatasetError(f"{path}: key {key!r} cannot be read (corrupt or truncated?): {exc}")


def load(path: str | Path) -> Dataset:
    """Read and validate a dataset ``.npz`` (keys as in ``shared/data-format.md``).

    A bare 2-D complex ``u`` is taken as F = C = 1 when ``spacing`` has length 2. A
    3-D ``u`` is ambiguous (a 3-D grid or a 2-D grid with components) and is refused.
    Keys other than the documented ones are ignored.

    Raises:
      DatasetError: missing/unreadable file, unsupported extension, missing key,
        object arrays, or any invalid array (see :class:`Dataset`).
    """
    path = Path(path)
    name = path.name.lower()
    if not path.exists():
        raise DatasetError(f"no such file: {path}")
    if path.is_dir():
        raise DatasetError(f"{path} is a directory; expected an .npz file")
    if not name.endswith(".npz"):
        suffix = ".nii.gz" if name.endswith(".nii.gz") else path.suffix
        hint = (
            f"convert it first: helmholtz-pinn convert {path} --out data.npz"
            if suffix in _CONVERTIBLE
            else "use helmholtz-pinn convert for .mat/.nii/.nii.gz scanner files"
        )
        raise DatasetError(f"unsupported file type {suffix!r} ({path}); expected .npz; {hint}")
    arrays = _read_npz(path)
    missing = [k for k in REQUIRED_KEYS if k not in arrays]
    if missing:
        raise DatasetError(
            f"{path}: missing required key {missing[0]!r}; found keys {sorted(arrays)}"
        )
    try:
        u = _expand_bare_u(arrays["u"], arrays["spacing"])
        return Dataset(
            u=u,
            frequency=arrays["frequency"],
            spacing=arrays["spacing"],
            **{k: arrays[k] for k in OPTIONAL_KEYS if k in arrays},
        )
    except DatasetError as exc:
        raise DatasetError(f"{path}: {exc}") from exc


def _expand_bare_u(u: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """Apply the contract's convenience for a bare 2-D ``u``; refuse a 3-D ``u``."""
    if u.ndim == 2 and u.dtype.kind == "c" and np.shape(spacing) == (2,):
        return u[None, None]
    if u.ndim == 2:
        raise DatasetError(
            f"u of shape {u.shape} is accepted as one 2-D field only if complex with a "
            f"spacing of length 2; got {_describe(u)} and spacing shape "
            f"{np.shape(spacing)}; expected u with shape (F, C, nx, ny)"
        )
    if u.ndim == 3:
        raise DatasetError(
            f"u of shape {u.shape} is ambiguous (3-D grid, or 2-D grid with components "
            "or frequencies); store u with shape (F, C, *grid), e.g. u[None, None] for "
            "one 3-D field or u[None] for components of one 2-D field"
        )
    return u


def save(dataset: Dataset, path: str | Path) -> Path:
    """Write ``dataset`` to ``path`` (must end in ``.npz``); returns the path.

    Writes exactly the contract keys; ``mu`` and ``regions`` are omitted when None.
    ``load(save(d, p))`` reproduces every field (values and dtypes) exactly.
    """
    path = Path(path)
    if not path.name.lower().endswith(".npz"):
        raise DatasetError(f"output file must end in .npz; got {path}")
    arrays = {
        "u": dataset.u,
        "frequency": dataset.frequency,
        "spacing": dataset.spacing,
        "mask": dataset.mask,
        "mu": dataset.mu,
        "regions": dataset.regions,
        "rho": np.float64(dataset.rho),
    }
    with open(path, "wb") as f:  # a file object: np.savez never renames it
        np.savez(f, **{k: v for k, v in arrays.items() if v is not None})
    return path


def z_slices(dataset: Dataset) -> tuple[list[Dataset], list[int]]:
    """The z-slices of a 3-D dataset as 2-D datasets (spacing[:2]), with their indices;
    slices whose mask is empty are left out."""
    if dataset.ndim != 3:
        raise DatasetError(
            f"slicewise inversion needs a 3-D dataset (u of shape (F, C, nx, ny, nz)); got u "
            f"of shape {dataset.u.shape}"
        )
    keep = [k for k in range(dataset.grid[2]) if dataset.mask[..., k].any()]

    def cut(a, k):
        return None if a is None else a[..., k]

    slices = [
        Dataset(
            u=dataset.u[..., k],
            frequency=dataset.frequency,
            spacing=dataset.spacing[:2],
            mask=dataset.mask[..., k],
            mu=cut(dataset.mu, k),
            regions=cut(dataset.regions, k),
            rho=dataset.rho,
        )
        for k in keep
    ]
    return slices, keep
