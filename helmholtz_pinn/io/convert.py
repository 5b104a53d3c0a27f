"""Convert scanner data (MATLAB ``.mat``, NIfTI) into a :class:`~helmholtz_pinn.io.dataset.Dataset`.

Sources (read by :mod:`helmholtz_pinn.io.readers`, whose public names are re-exported):

- MATLAB ``.mat`` (v5 or v7.3/HDF5), axes in MATLAB's order. One array holds the wave
  field: a complex first-harmonic field, or real multi-phase wave images with a
  phase/time axis. Frequency (Hz) and spacing may be variables of the file (``freq``,
  ``frequency``, ``spacing``, ``voxel_size``, ``pixel_spacing``, ...; also one level
  down in a struct; a name ending in mm, ``voxel_mm``, ``spacing_mm``, is in mm) or
  arguments.
- NIfTI: one complex (or real multi-phase) volume, a real + imaginary pair or a
  magnitude + phase pair (phase in radians). Spacing comes from the header zooms in the
  header's unit (mm when the header says "unknown"), converted to metres; the header's
  affine (mm) becomes the dataset's ``affine``.
- Known MATLAB layouts (``preset``, :mod:`helmholtz_pinn.io.presets`): "bioqic" for
  BIOQIC/MDEV-style 6-D phase arrays.

Layout. ``axes`` names each axis of the wave array in order (MATLAB's order for
``.mat``, NIfTI's i, j, k, t, ... order for NIfTI): ``x``, ``y``, ``z`` = grid,
``c`` = displacement component, ``f`` = frequency, ``t`` = phase offset (time), ``-`` =
a length-1 axis to drop (e.g. NIfTI's empty time axis before vector components). It is
required whenever the array has more than its grid dimensions; only 2-D arrays (and
3-D NIfTI volumes, whose first three axes are spatial by definition) go without it.
A grid with a single z slice becomes a 2-D grid.

First harmonic. With ``T`` phase offsets ``w_t`` (t = 0..T-1) over one period,
``u = 2/T * sum_t w_t exp(-2 pi i t / T)``, so that ``w_t = Re(u exp(2 pi i t / T))``.
MR phase images over time (``phase=``; by default for a magnitude + phase NIfTI pair
with a ``t`` axis) are first unwrapped, then fitted with a static offset and a linear
drift besides the harmonic (:func:`~helmholtz_pinn.io.readers.phase_harmonic`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from helmholtz_pinn.errors import DatasetError
from helmholtz_pinn.io import masks, presets
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.io.readers import (
    FREQUENCY_NAMES,
    KINDS,
    PHASE_MODES,
    READERS,
    SPACING_MM_NAMES,
    SPACING_NAMES,
    grid_affine,
    metadata,
    nifti_grid_axes,
    phase_harmonic,
    pick_wave,
    polar_to_complex,
    read_mat,
    read_nifti,
    read_nifti_affine,
    read_nifti_wave,
    reader_for,
    unwrap_phase_series,
)

__all__ = [
    "KINDS",
    "PHASE_MODES",
    "PRESETS",
    "READERS",
    "SPACING_UNITS",
    "arrange",
    "convert",
    "first_harmonic",
    "grid_affine",
    "phase_harmonic",
    "polar_to_complex",
    "read_mat",
    "read_nifti",
    "read_nifti_affine",
    "read_nifti_wave",
    "unwrap_phase_series",
]

SPACING_UNITS = {"m": 1.0, "mm": 1e-3}
_PLAUSIBLE_SPACING_M = (1e-5, 0.05)
PRESETS = presets.PRESETS


def convert(
    inputs: str | Path | Sequence[str | Path],
    *,
    kind: str = "auto",
    variable: str | None = None,
    axes: str | None = None,
    frequency: float | Sequence[float] | None = None,
    spacing: float | Sequence[float] | None = None,
    spacing_unit: str = "m",
    phase: str | None = None,
    preset: str | None = None,
    mask_from: str | None = None,
) -> Dataset:
    """Read scanner files into a validated :class:`Dataset`.

    Args:
      inputs: one ``.mat``/``.h5`` file; one NIfTI file; or two NIfTI files
        (real, imaginary) or (magnitude, phase in radians).
      kind: a reader of :data:`~helmholtz_pinn.io.readers.READERS` ("mat", "nifti",
        "nifti-complex", "nifti-polar"), or "auto": the reader that recognises the
        files (by extension; for NIfTI pairs by the words real/imag or mag/phase in
        the file names).
      variable: name of the wave-field variable in a ``.mat`` file (needed only when
        several arrays qualify; struct fields are named ``struct.field``).
      axes: layout of the wave array, e.g. "xyzcf" or "fctzxy" (see module doc).
      frequency: drive frequency per field, Hz; overrides the file.
      spacing: voxel size in x, y(, z) order (one value = isotropic; a third value
        for a 2-D grid is taken as slice thickness and dropped), in ``spacing_unit``;
        overrides the file and the NIfTI header. Spacing variables of ``.mat`` files
        are read in the same order and unit.
      spacing_unit: "m" or "mm": unit of ``spacing`` and of spacing variables read from
        ``.mat`` files (NIfTI headers carry their own unit).
      phase: the real images along the ``t`` axis are MR phase in radians, unwrapped
        by "time" (along the time steps), "space" (each image over the grid,
        scikit-image), "unwrapped" (already unwrapped) or "auto" ("unwrapped" if some
        |phase| > pi, else "time"); offset and linear drift are then removed before
        the first harmonic. None: "auto" for a magnitude + phase NIfTI pair whose
        axes include ``t``, else the images are taken as displacement (plain harmonic).
      preset: a known MATLAB layout of :data:`PRESETS` (:mod:`helmholtz_pinn.io.presets`):
        "bioqic" reads BIOQIC/MDEV-style 6-D phase arrays ``[rows, columns, slices,
        time steps, components, frequencies]`` with their variable names; ``variable``,
        ``axes``, ``phase``, ``frequency`` and ``spacing`` still override it.
      mask_from: "magnitude": the mask is made from the magnitude images (a
        "nifti-polar" pair's first file, or a MATLAB ``magnitude`` variable laid out like
        the wave field) by :func:`helmholtz_pinn.io.masks.from_magnitude`; not with a mask
        variable in the file. None: the file's ``mask`` variable, else every voxel.

    ``u`` keeps the source's precision on every path: complex128 from double-precision
    data, complex64 from single precision (or integer images).

    A NIfTI input sets the dataset's ``affine`` (:func:`grid_affine`: the header's, in
    mm, for the grid axes); a MATLAB input has none.

    Returns:
      The validated :class:`Dataset`: ``u`` ``(F, C, *grid)``, ``frequency`` Hz,
      ``spacing`` m, the mask and (NIfTI) the affine.

    Raises:
      DatasetError: unreadable input, unknown or ambiguous layout, missing frequency
        or spacing, or an invalid result.
    """
    paths = [Path(p) for p in ([inputs] if isinstance(inputs, (str, Path)) else inputs)]
    if spacing_unit not in SPACING_UNITS:
        raise DatasetError(f"spacing_unit must be 'm' or 'mm'; got {spacing_unit!r}")
    unit = SPACING_UNITS[spacing_unit]
    for p in paths:
        if not p.is_file():
            raise DatasetError(f"no such file: {p}")
    spec = None if preset is None else presets.get(preset)
    if spec is not None and kind not in ("auto", "mat"):
        raise DatasetError(f"preset {preset!r} reads MATLAB files; got kind {kind!r}")
    kind = "mat" if spec is not None else _resolve_kind(paths, kind)
    axes = spec.axes if spec is not None and axes is None else axes
    phase = spec.phase if spec is not None and phase is None else phase
    series = kind == "nifti-polar" and axes is not None and "t" in axes
    phase = "auto" if series and phase is None else phase
    if kind == "mat":
        source = _mat_source(paths, variable, unit, spec, spacing is None)
        name, wave, file_freq, file_spacing, mask, magnitude = source
    else:
        wave, zooms = read_nifti_wave(paths, kind, phase_series=series)
        name, file_freq, mask = paths[0].name, None, None
        magnitude = read_nifti(paths[0])[0] if kind == "nifti-polar" and mask_from else None
    axes = axes if axes is not None else _default_axes(wave, name, kind != "mat")
    u = arrange(wave, axes, name, phase=phase)
    if spacing is not None:
        values = _float_vector("spacing", spacing) * unit
    else:
        values = zooms[nifti_grid_axes(axes)] if kind != "mat" else file_spacing
    if values is None:
        raise DatasetError(
            f"voxel spacing unknown: {paths[0]} has no spacing/voxel_size variable; "
            "pass spacing=[dx, dy(, dz)] with spacing_unit='m' or 'mm'"
        )
    affine = _input_affine(paths[0], axes) if kind != "mat" else None
    u, values = _squeeze_single_slice(u, values)
    mask = _mask(mask_from, magnitude, mask, axes, paths[0], u.ndim)
    return Dataset(
        u=u.astype(_precision(wave)),
        frequency=_resolve_frequency(frequency, file_freq, u.shape[0], paths[0]),
        spacing=_check_spacing(values, u.ndim - 2),
        mask=mask,
        affine=affine,
    )


def _precision(wave: np.ndarray) -> type:
    """u's dtype: the source's precision, whatever the path (phase unwrapping and the
    harmonic work in float64): complex128 from double data, complex64 from anything else."""
    return np.complex128 if wave.dtype in (np.float64, np.complex128) else np.complex64


def _mask(mask_from, magnitude, mask, axes: str, path: Path, u_ndim: int):
    """The dataset's mask on the grid: made from the magnitude images (``mask_from``),
    else the file's mask variable, else None (every voxel)."""
    if mask_from is not None:
        mask = masks.for_convert(mask_from, magnitude, mask, axes, path)
    elif mask is not None:
        mask = _grid_array(mask, axes, "mask")
    if mask is not None and mask.ndim == 3 and mask.shape[2] == 1 and u_ndim == 4:
        mask = mask[..., 0]  # the slice axis was squeezed
    return mask


def _input_affine(path: Path, axes: str) -> np.ndarray | None:
    """:func:`grid_affine` of a NIfTI input, None when its grid axes are not all among
    the first three (spatial) NIfTI axes (spacing was then given)."""
    return grid_affine(path, axes) if max(axes.find(a) for a in "xyz") <= 2 else None


def _mat_source(
    paths: list[Path],
    variable: str | None,
    unit: float,
    spec: presets.Preset | None,
    need_spacing: bool,
) -> tuple:
    """(wave name, wave array, frequency Hz, spacing m (if ``need_spacing``), mask,
    magnitude) from
    one MATLAB file, laid out by the preset ``spec`` when given."""
    if len(paths) != 1:
        raise DatasetError(f"kind 'mat' takes one file; got {len(paths)}")
    path = paths[0]
    variables = read_mat(path)
    spacing = None
    if spec is None:
        name, wave = pick_wave(variables, variable, path)
    else:
        name, wave = presets.wave(spec, variables, variable, path)
        grid = tuple(wave.shape[spec.axes.index(a)] for a in "xyz" if a in spec.axes)
        spacing = presets.spacing(spec, variables, grid, path) if need_spacing else None
    frequency = metadata(variables, FREQUENCY_NAMES, "frequency", path)
    if spacing is None:
        spacing = metadata(variables, SPACING_NAMES, "spacing", path)
        spacing = None if spacing is None else spacing * unit
    if spacing is None:  # a name that states mm (voxel_mm) is in mm whatever spacing_unit says
        mm = metadata(variables, SPACING_MM_NAMES, "spacing", path)
        spacing = None if mm is None else mm * 1e-3
    return name, wave, frequency, spacing, variables.get("mask"), variables.get("magnitude")


# --- layout ---


def arrange(
    array: np.ndarray, axes: str, name: str = "wave field", *, phase: str | None = None
) -> np.ndarray:
    """Reorder ``array`` (axes named by ``axes``) into ``u`` of shape ``(F, C, *grid)``.

    Missing ``f``/``c`` axes become length 1; a ``t`` axis (real multi-phase images) is
    reduced to the first temporal harmonic (see :func:`first_harmonic`); with ``phase``
    (a mode of :func:`unwrap_phase_series`) the images are MR phase in radians,
    unwrapped and reduced by :func:`phase_harmonic` (offset and drift removed).
    """
    array = np.asarray(array)
    _check_axes(axes, array.shape, name)
    if phase is not None and "t" not in axes:
        raise DatasetError(
            f"phase={phase!r} applies to phase images over time steps (a 't' axis); "
            f"axes {axes!r} has none"
        )
    if ("t" in axes) == (array.dtype.kind == "c"):
        raise DatasetError(
            f"{name} is {array.dtype} {array.shape} with axes {axes!r}: expected either a "
            "complex first-harmonic field (no 't' axis) or real multi-phase wave images "
            "with a phase axis 't'"
        )
    array = np.squeeze(array, axis=tuple(i for i, a in enumerate(axes) if a == "-"))
    axes = axes.replace("-", "")
    out_dtype = np.result_type(array.dtype, np.complex64)
    present = [a for a in "fctxyz" if a in axes]
    u = np.transpose(array, [axes.index(a) for a in present])
    for position, letter in enumerate("fc"):
        if letter not in axes:
            u = np.expand_dims(u, position)
    if "t" in axes and phase is not None:
        u = phase_harmonic(unwrap_phase_series(u, phase, axis=2), axis=2)
    elif "t" in axes:
        u = first_harmonic(u, axis=2)
    return u.astype(out_dtype)


def first_harmonic(w: np.ndarray, axis: int) -> np.ndarray:
    """First temporal harmonic ``u = 2/T sum_t w_t exp(-2 pi i t / T)`` along ``axis``.

    ``w`` holds T >= 3 equally spaced phase offsets over one period; the axis is
    removed. For real ``w_t = Re(u exp(2 pi i t / T))`` this returns ``u`` exactly.
    """
    n = w.shape[axis]
    if n < 3:
        raise DatasetError(f"phase axis 't' has {n} samples; need >= 3 per period")
    weights = np.exp(-2j * np.pi * np.arange(n) / n)
    return np.tensordot(np.moveaxis(w, axis, -1), weights, axes=1) * (2.0 / n)


def _check_axes(axes: str, shape: tuple[int, ...], name: str) -> None:
    letters = axes.replace("-", "") if isinstance(axes, str) else ""
    ok = (
        isinstance(axes, str)
        and len(axes) == len(shape)
        and set(axes) <= set("xyzcft-")
        and len(set(letters)) == len(letters)
        and {"x", "y"} <= set(axes)
        and all(n == 1 for a, n in zip(axes, shape, strict=True) if a == "-")
    )
    if not ok:
        raise DatasetError(
            f"axes {axes!r} does not fit {name} of shape {shape}: expected one letter "
            "per axis from x, y, z (grid), c (component), f (frequency), t (phase), "
            "each at most once, including x and y ('-' marks a length-1 axis to drop)"
        )


def _default_axes(array: np.ndarray, name: str, nifti: bool) -> str:
    if array.ndim == 2 or (nifti and array.ndim == 3):
        return "xyz"[: array.ndim]
    example = {3: "xyc' or 'xyz", 4: "xyzc' or 'xyct", 5: "xyzcf' or 'xyzct"}
    raise DatasetError(
        f"{name} has shape {array.shape}; cannot tell which axes are grid (x, y, z), "
        "component (c), frequency (f) or phase (t): pass axes, e.g. "
        f"axes='{example.get(array.ndim, 'xyzcft')}'"
    )


def _grid_array(array: np.ndarray, axes: str, name: str) -> np.ndarray:
    """A grid-only array (e.g. mask) whose axes follow the grid letters of ``axes``."""
    grid_axes = [a for a in axes if a in "xyz"]
    if array.ndim != len(grid_axes):
        raise DatasetError(f"{name} has shape {array.shape}; expected grid axes {grid_axes}")
    return np.transpose(array, [grid_axes.index(a) for a in sorted(grid_axes)])


def _squeeze_single_slice(u: np.ndarray, spacing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 3-D grid with one z slice becomes 2-D (its z spacing is dropped)."""
    if u.ndim == 5 and u.shape[4] == 1:
        u = u[..., 0]
        if np.size(spacing) == 3:
            spacing = np.ravel(spacing)[:2]
    return u, spacing


# --- metadata ---


def _resolve_kind(paths: list[Path], kind: str) -> str:
    if kind not in KINDS:
        raise DatasetError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind if kind != "auto" else reader_for(paths).kind


def _resolve_frequency(
    given: float | Sequence[float] | None,
    from_file: np.ndarray | None,
    n_freq: int,
    path: Path,
) -> np.ndarray:
    """Drive frequencies in Hz, one per field: the argument, else the file's variable."""
    if given is None and from_file is None:
        raise DatasetError(
            f"drive frequency unknown: {path} holds none; pass frequency=[Hz, ...] "
            f"with {n_freq} value(s) (frequency=)"
        )
    values = _float_vector("frequency", given if given is not None else from_file)
    if values.shape != (n_freq,):
        raise DatasetError(
            f"frequency has {values.size} value(s) {values.tolist()}; the wave field has "
            f"{n_freq} frequencies (F)"
        )
    return values


def _float_vector(name: str, value: object) -> np.ndarray:
    try:
        return np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel()
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{name} must be numbers; got {value!r}") from exc


def _check_spacing(spacing_m: np.ndarray, ndim: int) -> np.ndarray:
    """Voxel size in metres per grid axis (one value = isotropic; a slice thickness of
    a 2-D grid is dropped); implausible sizes suggest a unit mistake."""
    spacing_m = np.ravel(spacing_m)
    if spacing_m.size == 1:
        spacing_m = np.repeat(spacing_m, ndim)
    elif spacing_m.size == 3 and ndim == 2:
        spacing_m = spacing_m[:2]
    if spacing_m.size != ndim:
        raise DatasetError(
            f"spacing {spacing_m.tolist()} has {spacing_m.size} values; the grid has {ndim} axes"
        )
    lo, hi = _PLAUSIBLE_SPACING_M
    if np.any((spacing_m > 0) & ((spacing_m < lo) | (spacing_m > hi))):
        raise DatasetError(
            f"spacing {spacing_m.tolist()} m is implausible for MRE voxels ({lo:g}..{hi:g} m); "
            "a unit mix-up? set spacing_unit='mm' for millimetre values, or pass spacing"
        )
    return spacing_m
