"""Wave-field datasets: the canonical ``.npz`` format of ``shared/data-format.md``.

A dataset holds the first-harmonic displacement ``u`` (complex, ``(F, C, *grid)``),
the drive ``frequency`` (Hz, ``(F,)``), the voxel ``spacing`` (m, ``(ndim,)``), an
optional ``mask``, optional ground truth ``mu`` (complex Pa), ``regions``, ``rho``
(kg/m^3) and the scanner ``affine`` (4x4, mm) of the grid.

``Dataset(...)`` validates and normalises its arrays (:mod:`helmholtz_pinn.io.validation`);
``load`` and ``save`` read and write the ``.npz`` file. Every problem raises
:class:`DatasetError` with one line that names the key, what was found and what was
expected.
"""

from __future__ import annotations

import dataclasses
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from helmholtz_pinn.errors import DatasetError, OutputError
from helmholtz_pinn.io.readers import SUFFIXES as _CONVERTIBLE  # what convert reads
from helmholtz_pinn.io.validation import (
    check_affine,
    check_mask,
    check_mu,
    check_positive_vector,
    check_regions,
    check_rho,
    check_u,
    describe,
    fill_outside,
)

REQUIRED_KEYS = ("u", "frequency", "spacing")
OPTIONAL_KEYS = ("mask", "mu", "regions", "rho", "affine")
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


__all__ = ["EXAMPLES", "Dataset", "DatasetError", "example", "load", "save", "z_slices"]


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
      affine: voxel-to-world matrix (4x4, mm; NIfTI's convention) of the grid, column k
        for grid axis k (for a 2-D grid the third column is the slice normal), or None
        (float64). Set by :func:`helmholtz_pinn.io.convert.convert` from a NIfTI input; the
        NIfTI maps of ``Result.save`` take its orientation and origin.

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
    affine: np.ndarray | None = None

    def __post_init__(self) -> None:
        u = check_u(self.u)
        grid = u.shape[2:]
        fields = {
            "u": u,
            "frequency": check_positive_vector(
                "frequency", self.frequency, u.shape[0], "(F,)", "Hz"
            ),
            "spacing": check_positive_vector("spacing", self.spacing, len(grid), "(ndim,)", "m"),
            "mask": check_mask(self.mask, grid),
            "mu": check_mu(self.mu, u.shape[0], grid),
            "regions": check_regions(self.regions, grid),
            "rho": check_rho(self.rho),
            "affine": check_affine(self.affine),
        }
        fields["u"] = fill_outside(u, fields["mask"], self.mask is not None)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def grid(self) -> tuple[int, ...]:
        """The grid's shape ``(nx, ny)`` or ``(nx, ny, nz)``, voxels."""
        return tuple(self.u.shape[2:])

    @property
    def ndim(self) -> int:
        """Spatial dimensions, 2 or 3."""
        return self.u.ndim - 2

    @property
    def n_freq(self) -> int:
        """Frequencies F."""
        return self.u.shape[0]

    @property
    def n_comp(self) -> int:
        """Displacement components C."""
        return self.u.shape[1]


# --- files ---


# Names a required key is often stored under, for the hint of a missing key.
KEY_ALIASES = {
    "u": ("displacement", "wave", "field", "data", "u_complex"),
    "frequency": ("freq", "freqs", "frequencies", "f", "f_hz", "frequency_hz", "omega"),
    "spacing": ("voxel_size", "voxelsize", "dx", "h", "pixdim", "resolution", "spacing_m"),
}


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, read eagerly; file problems -> DatasetError."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] != b"PK":  # every .npz is a zip archive
        what = "a .npy array" if head == b"\x93NUM" else "not a zip archive"
        raise DatasetError(
            f"{path} is not an .npz file ({what}): expected a NumPy .npz archive, as "
            "hp.save or helmholtz-pinn convert write (docs/data-format.md)"
        )
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
    """Read and validate a dataset ``.npz`` (keys as in ``docs/data-format.md``).

    A bare 2-D complex ``u`` is taken as F = C = 1 when ``spacing`` has length 2. A
    3-D ``u`` is ambiguous (a 3-D grid or a 2-D grid with components) and is refused.
    Keys other than the documented ones are ignored.

    Args:
      path: the ``.npz`` file (scanner files: :func:`~helmholtz_pinn.io.convert.convert`).

    Returns:
      The validated :class:`Dataset`.

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
    if not path.is_file():  # a FIFO would block the read forever
        raise DatasetError(
            f"{path} is not a regular file (a pipe or a device); expected an .npz file"
        )
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
        key = missing[0]
        near = [k for k in arrays if k.lower() in KEY_ALIASES.get(key, ())]
        rename = f"rename {near[0]!r} to {key!r}; " if near else ""
        raise DatasetError(
            f"{path}: missing required key {key!r}; found keys {sorted(arrays)}; {rename}"
            f"the keys and units are in docs/data-format.md"
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


EXAMPLES = {  # name -> what it is; the files are in helmholtz_pinn/examples/<name>.npz
    "elastic-two-ellipse-slice": (
        "the middle z-plane of elastic.simulate_elastic('two-ellipse', frequencies=(80.0, "
        "100.0), shape=(30, 36, 5), spacing=(2e-3,) * 3): 3-D viscoelastic Navier-Cauchy by "
        "P2 finite elements, free faces; 30 x 36 voxels of 2 mm, 3 components, a 6 kPa and "
        "a 1.5 kPa ellipse in 3 kPa (eta 1 Pa s), with the true modulus and regions"
    ),
}


def example(name: str) -> Dataset:
    """A stored example dataset (data the PINN's own model did not make, ready in a
    second instead of the minutes its simulation takes).

    Args:
      name: a key of :data:`EXAMPLES`, e.g. "elastic-two-ellipse-slice".

    Returns:
      The :class:`Dataset`, with its ground truth.

    Raises:
      DatasetError: unknown ``name``.
    """
    if name not in EXAMPLES:
        raise DatasetError(f"unknown example {name!r}; valid names: {', '.join(EXAMPLES)}")
    return load(Path(__file__).parents[1] / "examples" / f"{name}.npz")


def _expand_bare_u(u: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """Apply the contract's convenience for a bare 2-D ``u``; refuse a 3-D ``u``."""
    if u.ndim == 2 and u.dtype.kind == "c" and np.shape(spacing) == (2,):
        return u[None, None]
    if u.ndim == 2:
        raise DatasetError(
            f"u of shape {u.shape} is accepted as one 2-D field only if complex with a "
            f"spacing of length 2; got {describe(u)} and spacing shape "
            f"{np.shape(spacing)}; expected u with shape (F, C, nx, ny)"
        )
    if u.ndim == 3:
        raise DatasetError(
            f"u of shape {u.shape} is ambiguous (3-D grid, or 2-D grid with components "
            "or frequencies); store u with shape (F, C, *grid), e.g. u[None, None] for "
            "one 3-D field or u[None] for components of one 2-D field"
        )
    return u


def save(dataset: Dataset, path: str | Path, *, overwrite: bool = True) -> Path:
    """Write ``dataset`` to a ``.npz`` file.

    Writes exactly the contract keys; ``mu``, ``regions`` and ``affine`` are omitted
    when None. ``load(save(d, p))`` reproduces every field (values and dtypes) exactly.
    The file is written beside and renamed into place; with ``overwrite=False`` it is
    linked into place instead, which fails when the name is taken (also by another process
    meanwhile).

    Args:
      dataset: the :class:`Dataset` to write.
      path: the file; must end in ``.npz``.
      overwrite: replace an existing ``path`` (False: refuse it with an OutputError).

    Returns:
      ``path``.

    Raises:
      DatasetError: ``path`` does not end in ``.npz``.
      OutputError: the write failed (a full disk), or ``path`` exists and ``overwrite`` is
        False; ``path`` is left as it was.
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
        "affine": dataset.affine,
    }
    taken = f"{path} already exists: overwrite=True replaces it"
    if not overwrite and path.exists():  # before the work of writing it
        raise OutputError(taken)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:  # written beside, then renamed: a failed write leaves no truncated .npz
        with open(tmp, "wb") as f:  # a file object: np.savez never renames it
            np.savez(f, **{k: v for k, v in arrays.items() if v is not None})
        if overwrite:
            tmp.replace(path)
        else:
            _link_new(tmp, path)
    except FileExistsError:
        raise OutputError(taken) from None
    except OSError as err:
        raise OutputError(
            f"cannot write {path}: {err.strerror or err}; nothing was written there"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _link_new(tmp: Path, path: Path) -> None:
    """Give the written file ``tmp`` the name ``path`` unless that name is taken
    (:class:`FileExistsError`): a hard link, atomic; where the file system has none, a
    check and a rename."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (FAT, some network file systems)
        if path.exists():
            raise FileExistsError(path) from None
        tmp.replace(path)


def unit_amplitude(dataset: Dataset) -> tuple[Dataset, float]:
    """``(dataset with u / s, s)``: s is the power of two nearest the largest finite
    amplitude of u in the mask, found in float64, so that the fit and the checks never
    square a number near float32's range (u of 1e20 or 1e-30 give the map of u of 1:
    the equations are linear in u). Dividing by a power of two is exact; multiply a
    fitted field by s to return to the data's unit. s is 1 for an all-zero u."""
    u = np.asarray(dataset.u)
    inside = u[..., dataset.mask] if dataset.mask is not None else u
    amplitude = np.abs(inside.astype(np.complex128))
    amplitude = amplitude[np.isfinite(amplitude)]
    peak = float(amplitude.max()) if amplitude.size else 0.0
    if peak == 0.0:
        return dataset, 1.0
    scale = float(2.0 ** np.round(np.log2(peak)))
    if scale == 1.0:
        return dataset, 1.0
    scaled = (u.astype(np.complex128) / scale).astype(u.dtype)
    return dataclasses.replace(dataset, u=scaled), scale


def z_slices(dataset: Dataset) -> tuple[list[Dataset], list[int]]:
    """The z-slices of a 3-D dataset as 2-D datasets (spacing[:2]), with their indices;
    slices whose mask is empty are left out. Slice k's affine has its origin moved k
    voxels along the third column."""
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
            affine=None if dataset.affine is None else _shifted(dataset.affine, k),
        )
        for k in keep
    ]
    return slices, keep


def _shifted(affine: np.ndarray, k: int) -> np.ndarray:
    out = affine.copy()
    out[:3, 3] += k * affine[:3, 2]
    return out
