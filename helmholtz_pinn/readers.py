"""Readers of scanner files: MATLAB ``.mat`` and NIfTI, as plain arrays.

- MATLAB ``.mat`` (v5 via ``scipy.io.loadmat``; v7.3/HDF5 via ``h5py``, whose arrays
  come in reversed axis order and are transposed back to MATLAB's order):
  :func:`read_mat` returns the numeric variables, struct fields as ``struct.field``.
- NIfTI (nibabel): :func:`read_nifti` returns one image and its zooms, the spatial ones
  in metres from the header's unit (mm when the header says "unknown");
  :func:`read_nifti_affine` its voxel-to-world affine in mm;
  :func:`read_nifti_wave` one complex wave array from one complex (or real multi-phase)
  volume, a real + imaginary pair or a magnitude + phase pair (phase in radians).

Every unreadable or inconsistent file raises :class:`~helmholtz_pinn.errors.DatasetError`.
:func:`helmholtz_pinn.scanner.convert` turns these arrays into a dataset.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import h5py
import numpy as np
import scipy.io
from scipy.io.matlab import MatReadError

from helmholtz_pinn.errors import DatasetError

_NIFTI_UNITS = {"meter": 1.0, "mm": 1e-3, "micron": 1e-6, "unknown": 1e-3}
# What scipy.io.loadmat raises on damaged or foreign files.
_UNREADABLE_MAT = (
    MatReadError,
    ValueError,
    TypeError,
    OSError,
    EOFError,
    IndexError,
    KeyError,
    NotImplementedError,
    zlib.error,
)


def read_mat(path: str | Path) -> dict[str, np.ndarray]:
    """Numeric variables of a MATLAB file, axes in MATLAB order.

    v7.3 (HDF5) files are read with h5py and transposed back to MATLAB's axis order;
    complex values stored as compound ('real', 'imag') are restored. Fields of a struct
    appear as ``struct.field``. Text, cell and empty variables are skipped.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"no such file: {path}")
    if h5py.is_hdf5(path):
        return _read_mat73(path)
    try:
        raw = scipy.io.loadmat(path, squeeze_me=False)
    except _UNREADABLE_MAT as exc:
        raise DatasetError(f"{path} is not a readable MATLAB .mat file: {exc}") from exc
    out: dict[str, np.ndarray] = {}
    for name, value in raw.items():
        if name.startswith("__") or not isinstance(value, np.ndarray):
            continue
        if value.dtype.names and value.size == 1:  # struct: one level of fields
            for field in value.dtype.names:
                _keep_numeric(out, f"{name}.{field}", value.flat[0][field])
        else:
            _keep_numeric(out, name, value)
    return out


def _keep_numeric(out: dict[str, np.ndarray], name: str, value: object) -> None:
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc" and value.size:
        out[name] = value


def _read_mat73(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}

    def visit(prefix: str, group: h5py.Group, depth: int) -> None:
        for key, item in group.items():
            if key.startswith("#"):  # MATLAB's #refs# / #subsystem#
                continue
            name = f"{prefix}{key}"
            if isinstance(item, h5py.Group) and depth == 0:
                visit(f"{name}.", item, depth + 1)
            elif isinstance(item, h5py.Dataset):
                matlab_class = item.attrs.get("MATLAB_class", b"")
                if isinstance(matlab_class, bytes):
                    matlab_class = matlab_class.decode()
                if matlab_class in ("char", "cell") or "MATLAB_empty" in item.attrs:
                    continue
                _keep_numeric(out, name, _h5_array(item[()]))

    try:
        with h5py.File(path, "r") as f:
            visit("", f, 0)
    except (OSError, TypeError, ValueError, KeyError) as exc:
        raise DatasetError(f"{path} is not a readable HDF5 (.mat v7.3) file: {exc}") from exc
    return out


def _h5_array(data: object) -> np.ndarray:
    """h5py value -> array in MATLAB axis order (reversed), compound -> complex."""
    a = np.asarray(data)
    if a.dtype.names and {"real", "imag"} <= set(a.dtype.names):
        z = np.empty(a.shape, np.result_type(a.dtype["real"], np.complex64))
        z.real, z.imag = a["real"], a["imag"]
        a = z
    return a.T


def read_nifti(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """A NIfTI image and its voxel size.

    Returns:
      (array in NIfTI axis order i, j, k, t, ... with scaling applied,
       zooms of every axis; the first three converted to metres from the header's
       spatial unit, mm when the header says "unknown").
    """
    path = Path(path)
    import nibabel as nib  # imported here: only NIfTI input needs it
    from nibabel.filebasedimages import ImageFileError
    from nibabel.spatialimages import HeaderDataError

    try:
        img = nib.load(path)
        data = np.asanyarray(img.dataobj)
    except (OSError, ValueError, EOFError, ImageFileError, HeaderDataError, zlib.error) as exc:
        raise DatasetError(f"{path} is not a readable NIfTI file: {exc}") from exc
    zooms = np.array(img.header.get_zooms(), dtype=np.float64)
    unit = img.header.get_xyzt_units()[0]
    zooms[:3] *= _NIFTI_UNITS.get(unit, 1e-3)
    return np.asarray(data), zooms


def read_nifti_affine(path: str | Path) -> np.ndarray:
    """The voxel-to-world affine (4x4) of a NIfTI file, in mm (converted from the
    header's spatial unit; mm when it says "unknown"); the header alone is read."""
    import nibabel as nib
    from nibabel.filebasedimages import ImageFileError
    from nibabel.spatialimages import HeaderDataError

    try:
        img = nib.load(Path(path))
    except (OSError, ValueError, EOFError, ImageFileError, HeaderDataError, zlib.error) as exc:
        raise DatasetError(f"{path} is not a readable NIfTI file: {exc}") from exc
    affine = np.array(img.affine, dtype=np.float64)
    affine[:3] *= _NIFTI_UNITS.get(img.header.get_xyzt_units()[0], 1e-3) / 1e-3
    return affine


def read_nifti_wave(paths: list[Path], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The wave array and zooms (see :func:`read_nifti`) of ``kind`` "nifti" (one file),
    "nifti-complex" (real, imaginary files) or "nifti-polar" (magnitude, phase files)."""
    if kind == "nifti":
        if len(paths) != 1:
            raise DatasetError(f"kind 'nifti' takes one file; got {len(paths)}")
        return read_nifti(paths[0])
    if len(paths) != 2:
        raise DatasetError(f"kind {kind!r} takes two NIfTI files; got {len(paths)}")
    (a, zooms), (b, zooms_b) = read_nifti(paths[0]), read_nifti(paths[1])
    if a.shape != b.shape or not np.allclose(zooms, zooms_b):
        raise DatasetError(
            f"{paths[0].name} and {paths[1].name} differ: shapes {a.shape} vs {b.shape}, "
            f"zooms {zooms.tolist()} vs {zooms_b.tolist()}"
        )
    if kind == "nifti-complex":
        return a + 1j * b.astype(np.result_type(b, np.float32)), zooms
    return polar_to_complex(a, b, paths[1].name), zooms


def polar_to_complex(magnitude: np.ndarray, phase: np.ndarray, name: str = "phase") -> np.ndarray:
    """``magnitude * exp(i phase)``; phase in radians (checked to lie in [-2 pi, 2 pi])."""
    lo, hi = float(np.min(phase)), float(np.max(phase))
    if lo < -2 * np.pi - 1e-3 or hi > 2 * np.pi + 1e-3:
        raise DatasetError(
            f"{name}: phase must be in radians; got values in [{lo:g}, {hi:g}] "
            "(rescale scanner units to radians first)"
        )
    if float(np.min(magnitude)) < 0:
        raise DatasetError(
            "magnitude has negative values; is it a real part? use kind 'nifti-complex'"
        )
    return magnitude * np.exp(1j * phase)
