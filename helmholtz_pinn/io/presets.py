"""Presets for known MATLAB exports, their variable names and axis order:
``convert(path, preset=NAME)`` / ``convert --preset``.

``bioqic``: BIOQIC phantom files and other MDEV-style phase arrays (Charite Berlin). The
MDEV inversion script documents its input as a 6-D MATLAB array
``[rows, columns, slices, time steps, components, frequencies]`` of MR phase in
radians: at least 3 time steps over one period, the components (slice, read-out and
phase-encoding directions) "in arbitrary order", and frequencies in the order of the
frequency list. The BIOQIC phantom files hold it as ``phase_unwrap_noipd``
(``phantom_unwrapped_dejittered.mat``), ``phase_unwrapped`` (``phantom_unwrapped.mat``)
or ``phase`` (``phantom_raw.mat``, wrapped), beside a ``magnitude`` array and an
``info`` struct with ``frequencies_Hz`` and the in-plane voxel size ``dy_m`` (rows)
and ``dx_m`` (columns), in metres. What the sources did not show (a slice-thickness
field, the physical direction of each component) is listed in docs/data-format.md.

MATLAB drops trailing axes of length 1 when it saves (one frequency: a 5-D array), so
the array is padded back to 6 axes. Grid axis x is the rows, y the columns, z the slices.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from helmholtz_pinn.errors import DatasetError
from helmholtz_pinn.io.readers import pick_wave


class Preset(NamedTuple):
    """A file layout: ``axes`` (MATLAB order, letters of ``scanner.convert``), the wave
    ``variables`` tried in order (else the one qualifying array), the ``phase`` mode of
    its ``t`` axis (``readers.PHASE_MODES``; None: displacement images) and the
    variables holding the voxel size of grid axes x, y, z in metres (``spacing_m``)."""

    axes: str
    variables: tuple[str, ...]
    phase: str | None
    spacing_m: tuple[str, ...]


PRESETS = {
    "bioqic": Preset(
        axes="xyztcf",
        variables=("phase_unwrap_noipd", "phase_unwrapped", "phase"),
        phase="auto",
        spacing_m=("info.dy_m", "info.dx_m", "info.dz_m"),
    ),
}


def get(name: str) -> Preset:
    if name not in PRESETS:
        raise DatasetError(f"preset must be one of {tuple(PRESETS)}; got {name!r}")
    return PRESETS[name]


def wave(
    preset: Preset, variables: dict[str, np.ndarray], variable: str | None, path: Path
) -> tuple[str, np.ndarray]:
    """(name, array) of the wave field, padded with trailing length-1 axes to the
    preset's axes: ``variable``, else the first of the preset's variables in the file,
    else the one qualifying array (:func:`helmholtz_pinn.io.readers.pick_wave`)."""
    if variable is None:
        variable = next((v for v in preset.variables if v in variables), None)
    name, array = pick_wave(variables, variable, path)
    missing = len(preset.axes) - array.ndim
    if missing < 0:
        raise DatasetError(
            f"{path}: {name} has shape {array.shape}; the preset's layout {preset.axes!r} "
            f"has {len(preset.axes)} axes"
        )
    return name, array.reshape(array.shape + (1,) * missing)


def spacing(
    preset: Preset, variables: dict[str, np.ndarray], grid: tuple[int, ...], path: Path
) -> np.ndarray | None:
    """Voxel size (m) of the grid axes from the preset's variables; a length-1 z axis
    needs none. None when the file has none of them; an error when some are missing."""
    names = preset.spacing_m
    needed = list(names[:2]) + ([names[2]] if len(grid) > 2 and grid[2] > 1 else [])
    found = [n for n in needed if n in variables and variables[n].size == 1]
    if not found:
        return None
    if len(found) < len(needed):
        absent = [n for n in needed if n not in found]
        raise DatasetError(
            f"{path} has {found} but not {absent} (voxel size in m per grid axis "
            f"{needed}); pass spacing=[...] for the {len(grid)} grid axes"
        )
    return np.array([float(variables[n].ravel()[0]) for n in found])
