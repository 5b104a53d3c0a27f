"""Readers of scanner files: MATLAB ``.mat`` and NIfTI, as plain arrays, and their registry.

:data:`READERS` declares each input format once (:class:`Reader`: its ``kind``, the file
endings it reads, how many files make one input and, for a pair, the words that tell
its files apart); :func:`helmholtz_pinn.io.convert.convert`'s ``kind``, the dataset
loader's hint and the command line's ``convert --kind`` choices are derived from it.

- MATLAB ``.mat`` (v5 and v7.3/HDF5, read by ``pymatreader``): :func:`read_mat` returns
  the numeric variables in MATLAB's axis order, struct fields as ``struct.field`` and
  cell elements as ``cell{1}``, at any depth.
- NIfTI (nibabel): :func:`read_nifti` returns one image and its zooms, the spatial ones
  in metres from the header's unit (mm when the header says "unknown");
  :func:`read_nifti_affine` its voxel-to-world affine in mm and :func:`grid_affine` that
  of the dataset grid;
  :func:`read_nifti_wave` one complex wave array from one complex (or real multi-phase)
  volume, a real + imaginary pair or a magnitude + phase pair (phase in radians).
- MR phase images over the time steps of a wave period: :func:`unwrap_phase_series`
  (along time with ``numpy.unwrap``, or spatially with scikit-image's ``unwrap_phase``)
  and :func:`phase_harmonic` (static offset and linear drift removed, first harmonic).

Every unreadable or inconsistent file raises :class:`~helmholtz_pinn.errors.DatasetError`.
:func:`helmholtz_pinn.io.convert.convert` turns these arrays into a dataset.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from helmholtz_pinn.errors import DatasetError, MissingDependencyError


class Reader(NamedTuple):
    """One input format of ``convert``.

    Attributes:
      kind: its name in ``convert(kind=...)`` and ``helmholtz-pinn convert --kind``.
      suffixes: the file name endings it reads (lower case).
      files: how many files make one input (a NIfTI pair: 2).
      words: for a pair, the words (split at non-letters) that mark the first and the
        second file's name, by which ``kind="auto"`` recognises it; () for one file.
      pair: how an error message names the pair's files, e.g. "real, imag files".
    """

    kind: str
    suffixes: tuple[str, ...]
    files: int = 1
    words: tuple[frozenset[str], ...] = ()
    pair: str = ""


_NIFTI = (".nii", ".nii.gz")
READERS = {
    r.kind: r
    for r in (
        Reader("mat", (".mat", ".h5", ".hdf5")),
        Reader("nifti", _NIFTI),
        Reader(
            "nifti-complex",
            _NIFTI,
            2,
            (frozenset({"real", "re"}), frozenset({"imag", "imaginary", "im"})),
            "real, imag files",
        ),
        Reader(
            "nifti-polar",
            _NIFTI,
            2,
            (frozenset({"mag", "magnitude", "abs", "amp"}), frozenset({"phase", "pha", "ph"})),
            "magnitude, phase files",
        ),
    )
}
KINDS = ("auto", *READERS)  # "auto": the reader that recognises the files (reader_for)
SUFFIXES = tuple(dict.fromkeys(s for r in READERS.values() for s in r.suffixes))


def reader_for(paths: list[Path]) -> Reader:
    """The first reader of :data:`READERS` that takes ``paths``: as many files, every
    name ending in one of its suffixes and, for a pair, each name holding its words.

    Raises:
      DatasetError: no reader recognises the files; the message lists the kinds.
    """
    names = [p.name.lower() for p in paths]
    words = [set(re.split(r"[^a-z]+", n)) for n in names]
    for reader in READERS.values():
        if (
            len(paths) == reader.files
            and all(n.endswith(reader.suffixes) for n in names)
            and all(w & marks for w, marks in zip(words, reader.words, strict=False))
        ):
            return reader
    kinds = [f"'{r.kind}'" + (f" ({r.pair})" if r.pair else "") for r in READERS.values()]
    raise DatasetError(
        f"cannot tell the input kind of {[str(p) for p in paths]}: pass kind="
        f"{', '.join(kinds[:-1])} or {kinds[-1]}"
    )


PHASE_MODES = ("auto", "time", "space", "unwrapped")
# Beyond this |phase| (about 16 cycles) values are taken for degrees or scanner units.
_MAX_PHASE_RAD = 100.0
_NIFTI_UNITS = {"meter": 1.0, "mm": 1e-3, "micron": 1e-6, "unknown": 1e-3}
# What pymatreader (scipy.io.loadmat, h5py) raises on damaged or foreign files, besides
# scipy's MatReadError (imported with pymatreader: only MATLAB input needs scipy).
_UNREADABLE_MAT = (
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
    """Numeric variables of a MATLAB file (v5, or v7.3 = HDF5), axes in MATLAB order.

    Read with ``pymatreader`` (scipy for v5, h5py for v7.3, axes transposed back to
    MATLAB's order, complex restored). Struct fields are named ``struct.field`` and
    cell elements ``cell{1}``, ``cell{2}``, ... (1-based, as in MATLAB), at any depth.
    Top-level arrays keep every axis of length 1 that MATLAB stored (pymatreader drops
    them; the shapes come from ``pymatreader.whosmat``); arrays inside structs and cells
    lose them. Text and empty variables are skipped; logical arrays come as 0/1.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"no such file: {path}")
    import pymatreader  # imported here: only MATLAB input needs it
    from scipy.io.matlab import MatReadError

    try:
        shapes = {name: shape for name, shape, _ in pymatreader.whosmat(path)}
        raw = pymatreader.read_mat(path)
    except (MatReadError, *_UNREADABLE_MAT) as exc:
        raise DatasetError(
            f"{path} is not a readable MATLAB .mat file{_mat_hint(path)}: {exc}"
        ) from exc
    out: dict[str, np.ndarray] = {}
    for name, value in raw.items():
        if not name.startswith("__"):
            _flatten(name, value, out)
    for name, shape in shapes.items():  # restore the length-1 axes read_mat squeezed
        if name in out and out[name].size == int(np.prod(shape)):
            out[name] = out[name].reshape(shape)
    return out


def _mat_hint(path: Path) -> str:
    """Why a file pymatreader cannot read may be so: a MATLAB header (v5, v7.3) over a
    body that does not parse is a truncated or corrupt file; HDF5 without that header
    was not saved by MATLAB."""
    import h5py

    with open(path, "rb") as f:
        head = f.read(116)
    if head.startswith(b"MATLAB"):
        version = "v7.3" if b"7.3" in head[:20] else "v5"
        return f" (a MATLAB {version} header over a truncated or corrupt body)"
    if h5py.is_hdf5(path):
        return " (HDF5 without a MATLAB header: save it from MATLAB with -v7.3)"
    return ""


def _flatten(name: str, value: object, out: dict[str, np.ndarray]) -> None:
    """Numeric leaves of pymatreader's nested dicts (structs) and lists (cells)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{name}.{key}", item, out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value, start=1):
            _flatten(f"{name}{{{i}}}", item, out)
    elif isinstance(value, (np.ndarray, np.number, int, float, complex)):
        a = np.asarray(value)
        if a.dtype.kind in "biufc" and a.size:
            out[name] = a


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


def nifti_grid_axes(axes: str) -> list[int]:
    """The NIfTI axes (of ``axes``, one letter per axis) holding grid x, y(, z), in that
    order; they must be among the first three (spatial) axes."""
    positions = [axes.index(a) for a in "xyz" if a in axes]
    if max(positions) > 2:
        raise DatasetError(
            f"axes {axes!r}: NIfTI grid axes x, y, z must be among the first three "
            "(spatial) dimensions; or pass spacing"
        )
    return positions


def grid_affine(path: str | Path, axes: str | None = None) -> np.ndarray:
    """The 4x4 affine (mm) of the dataset grid that ``scanner.convert`` makes of the NIfTI
    file ``path`` (the first of a pair) with the same ``axes`` (default "xyz").

    Its columns are the header affine's columns of the NIfTI axes holding x, y(, z);
    for a 2-D grid the remaining spatial axis (the slice normal) is the third column.
    For ``Result.save(out, nifti=True, affine=grid_affine(path))``: the maps then lie
    in the scanner coordinates of the input (``outputs.nifti_affine`` rescales the
    columns to the dataset's spacing).
    """
    positions = nifti_grid_axes("xyz" if axes is None else axes)
    affine = read_nifti_affine(path)
    columns = positions + [i for i in range(3) if i not in positions][: 3 - len(positions)]
    return affine[:, [*columns, 3]]


def read_nifti_wave(
    paths: list[Path], kind: str, *, phase_series: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The wave array and zooms (see :func:`read_nifti`) of ``kind`` "nifti" (one file),
    "nifti-complex" (real, imaginary files) or "nifti-polar" (magnitude, phase files).

    With ``phase_series`` (a "nifti-polar" pair whose phase holds the time steps of a
    wave period) the real phase images in radians are returned, not a complex field;
    the magnitude file is checked for shape only."""
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
    if phase_series:
        check_phase_radians(b, paths[1].name)
        return b.astype(np.result_type(b, np.float32)), zooms
    return polar_to_complex(a, b, paths[1].name), zooms


def check_phase_radians(phase: np.ndarray, name: str = "phase") -> None:
    """Refuse phase that is not finite radians: wrapped ([-pi, pi]) and unwrapped
    values are accepted up to |phase| = 100 rad (16 cycles); beyond that the values
    are taken for degrees or scanner units."""
    if not np.all(np.isfinite(phase)):
        raise DatasetError(f"{name}: phase has non-finite values")
    lo, hi = float(np.min(phase)), float(np.max(phase))
    if max(-lo, hi) > _MAX_PHASE_RAD:
        raise DatasetError(
            f"{name}: phase must be in radians; got values in [{lo:g}, {hi:g}], beyond "
            f"+-{_MAX_PHASE_RAD:g} rad (16 cycles): degrees (+-180) or scanner units "
            "(e.g. -4096..4095)? rescale to radians first (unwrapped radians are accepted)"
        )


def polar_to_complex(magnitude: np.ndarray, phase: np.ndarray, name: str = "phase") -> np.ndarray:
    """``magnitude * exp(i phase)``; phase in radians, wrapped or unwrapped (see
    :func:`check_phase_radians`)."""
    check_phase_radians(phase, name)
    if float(np.min(magnitude)) < 0:
        raise DatasetError(
            "magnitude has negative values; is it a real part? use kind 'nifti-complex'"
        )
    return magnitude * np.exp(1j * phase)


# --- phase images over time ---


def unwrap_phase_series(phase: np.ndarray, mode: str, axis: int) -> np.ndarray:
    """Unwrapped phase (radians) of phase images whose time steps lie along ``axis``
    and whose grid is the trailing 2 or 3 axes after it.

    ``mode``: "time" unwraps each voxel's series along time (``numpy.unwrap``; needs
    steps below pi between time steps); "space" unwraps each image over the grid with
    ``skimage.restoration.unwrap_phase`` (2-D/3-D; needs steps below pi between
    neighbouring voxels), then aligns the images by the multiple of 2 pi that unwraps
    their spatial mean along time; "unwrapped" returns the phase as given; "auto" is
    "unwrapped" when some |phase| > pi, else "time". A 2 pi k offset per voxel left
    by unwrapping is constant in time and is removed with the static offset
    (:func:`phase_harmonic`).
    """
    if mode not in PHASE_MODES:
        raise DatasetError(f"phase must be one of {PHASE_MODES}; got {mode!r}")
    check_phase_radians(phase)
    phase = np.asarray(phase, dtype=np.float64)
    if mode == "auto":
        mode = "unwrapped" if float(np.max(np.abs(phase))) > np.pi + 1e-6 else "time"
    if mode == "unwrapped":
        return phase
    if mode == "time":
        return np.unwrap(phase, axis=axis)
    try:
        from skimage.restoration import unwrap_phase
    except ImportError as exc:
        raise MissingDependencyError(
            "spatial phase unwrapping needs scikit-image: pip install scikit-image"
        ) from exc
    grid_ndim = phase.ndim - 1 - axis % phase.ndim
    if grid_ndim not in (2, 3):
        raise DatasetError(f"spatial unwrapping needs a 2-D or 3-D grid; got {grid_ndim}-D")
    grid = phase.shape[phase.ndim - grid_ndim :]
    wrapped = np.angle(np.exp(1j * phase.reshape(-1, *grid)))
    out = np.stack([unwrap_phase(f) for f in wrapped]).reshape(phase.shape)
    mean = out.mean(axis=tuple(range(out.ndim - grid_ndim, out.ndim)), keepdims=True)
    return out + (np.unwrap(mean, axis=axis) - mean)


def phase_harmonic(phase: np.ndarray, axis: int) -> np.ndarray:
    """First temporal harmonic of unwrapped phase after removing offset and drift.

    With T time steps ``t = 0..T-1`` over one period (time ``t / (T f)`` s at drive
    frequency f Hz), each voxel's phase (radians) is fitted by least squares as
    ``phi_t = c0 + c1 t + Re(u exp(2 pi i t / T))``: static offset ``c0`` (rad), linear
    drift ``c1`` (rad per time step) and the complex first harmonic ``u`` (rad;
    proportional to displacement through the motion-encoding sensitivity, which the
    scale-free inversion does not need). For T = 3 only the offset is removed (four
    unknowns need T >= 4); then ``u`` equals the DFT ``2/T sum_t phi_t exp(-2 pi i t / T)``.
    The time axis is removed.
    """
    n = phase.shape[axis]
    if n < 3:
        raise DatasetError(f"phase axis 't' has {n} samples; need >= 3 per period")
    t = np.arange(n, dtype=np.float64)
    theta = 2 * np.pi * t / n
    columns = [np.ones(n), t] if n >= 4 else [np.ones(n)]
    basis = np.stack([*columns, np.cos(theta), np.sin(theta)], axis=1)  # (T, k)
    coef = np.moveaxis(phase, axis, -1) @ np.linalg.pinv(basis).T  # (..., k)
    return coef[..., -2] - 1j * coef[..., -1]


# --- MAT variable lookup (names case- and punctuation-insensitive) ---

FREQUENCY_NAMES = {"freq", "freqs", "frequency", "frequencies", "freqhz", "frequencieshz"}
SPACING_NAMES = {"spacing", "voxelsize", "voxsize", "voxelspacing", "pixelsize"}
SPACING_NAMES |= {"pixelspacing", "resolution"}
SPACING_MM_NAMES = {"voxelmm", "voxelsizemm", "spacingmm", "pixelspacingmm"}  # read in mm


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rsplit(".", 1)[-1].lower())


def pick_wave(
    variables: dict[str, np.ndarray], variable: str | None, path: Path
) -> tuple[str, np.ndarray]:
    """The wave-field variable of a MAT file: ``variable``, else the one array with at
    least two axes of 3 or more that is not frequency, spacing or mask metadata."""
    if variable is not None:
        if variable not in variables:
            raise DatasetError(
                f"{path} has no numeric variable {variable!r}; found {sorted(variables)}"
            )
        return variable, variables[variable]
    meta = FREQUENCY_NAMES | SPACING_NAMES | SPACING_MM_NAMES | {"mask"}
    candidates = {
        k: v
        for k, v in variables.items()
        if sum(n >= 3 for n in v.shape) >= 2 and _normalise(k) not in meta
    }
    if len(candidates) != 1:
        listing = ", ".join(f"{k} {v.shape}" for k, v in candidates.items()) or "none"
        raise DatasetError(
            f"{path}: cannot pick the wave-field variable (candidates: {listing}); "
            "pass variable=NAME"
        )
    return next(iter(candidates.items()))


def metadata(
    variables: dict[str, np.ndarray], names: set[str], what: str, path: Path
) -> np.ndarray | None:
    """The small numeric variable called one of ``names`` (case and punctuation
    ignored), or None; conflicting ones are an error."""
    found = {
        k: np.ravel(v).astype(np.float64)
        for k, v in variables.items()
        if _normalise(k) in names and v.size <= 16
    }
    values = list(found.values())
    if any(v.shape != values[0].shape or not np.allclose(v, values[0]) for v in values):
        raise DatasetError(f"{path}: conflicting {what} variables {found}; pass {what} explicitly")
    return values[0] if values else None
