"""BIOQIC / MDEV-style MATLAB files (``preset="bioqic"``), structs and cells of v5 and
v7.3 files, and ``convert --phase`` / ``--preset`` through the command line. Files are
written here (scipy for v5, hdf5storage for MATLAB-compatible v7.3); the phase series
have a known first harmonic, so every answer is exact."""

import hdf5storage
import numpy as np
import pytest
import scipy.io

from helmholtz_pinn.cli.commands import main
from helmholtz_pinn.cli.parser import build_parser
from helmholtz_pinn.io.convert import convert, read_mat
from helmholtz_pinn.io.dataset import DatasetError, load
from helmholtz_pinn.io.presets import PRESETS
from helmholtz_pinn.io.readers import PHASE_MODES

ROWS, COLS, SLICES, STEPS = 5, 7, 3, 8
INFO = {"frequencies_Hz": np.array([[30.0, 50.0]]), "dx_m": 2e-3, "dy_m": 1.5e-3, "dz_m": 2.5e-3}


def _harmonic(rng, components, freqs, slices=SLICES):
    """Known first harmonic u = A exp(i phi), shape (F, C, rows, cols, slices), A <= 1.2 rad."""
    shape = (freqs, components, ROWS, COLS, slices)
    return rng.uniform(0.3, 1.2, shape) * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))


def _mdev_phase(u, offset=0.0, drift=0.0):
    """MDEV's 6-D layout [rows, cols, slices, t, components, frequencies] of
    phi_t = offset + drift t + Re(u exp(2 pi i t / T)), radians."""
    t = np.arange(STEPS)
    series = np.real(u[..., None] * np.exp(2j * np.pi * t / STEPS)) + offset + drift * t
    return np.transpose(series, (2, 3, 4, 5, 1, 0))  # (F, C, r, c, s, t) -> (r, c, s, t, C, F)


def test_bioqic_v5_struct_known_harmonic(tmp_path, rng):
    """phantom_unwrapped_dejittered.mat style: unwrapped phase with an offset of several
    cycles and a drift, beside a magnitude of the same shape and an info struct."""
    u = _harmonic(rng, components=3, freqs=2)
    phase = _mdev_phase(u, offset=4 * np.pi, drift=0.05)
    path = tmp_path / "phantom_unwrapped_dejittered.mat"
    variables = {"phase_unwrap_noipd": phase, "magnitude": np.abs(phase) + 1, "info": INFO}
    scipy.io.savemat(path, variables)
    d = convert(path, preset="bioqic")
    np.testing.assert_allclose(d.u, u, atol=1e-10)
    # MATLAB phase_unwrap_noipd(5, 7, 1, :, 3, 2) -> u[f=1, c=2, 4, 6, 0]
    assert abs(d.u[1, 2, 4, 6, 0] - u[1, 2, 4, 6, 0]) < 1e-10
    np.testing.assert_array_equal(d.frequency, [30.0, 50.0])
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2e-3, 2.5e-3])  # rows dy, columns dx
    assert d.affine is None


def test_bioqic_v73_one_slice_one_frequency_wrapped(tmp_path, rng):
    """phantom_raw.mat style in v7.3 (HDF5): wrapped phase, one slice and one frequency
    (MATLAB stores [rows, cols, 1, t, c]: the trailing frequency axis is dropped), a
    cell of notes; info without dz_m is enough for one slice."""
    u = 2.0 * _harmonic(rng, components=3, freqs=1, slices=1)  # up to 2.4 rad: wraps
    phase = _mdev_phase(u, offset=1.0)[..., 0]  # (5, 7, 1, 8, 3)
    wrapped = np.angle(np.exp(1j * phase))
    assert not np.allclose(wrapped, phase)
    info = {k: v for k, v in INFO.items() if k != "dz_m"} | {"frequencies_Hz": 40.0}
    path = tmp_path / "phantom_raw.mat"
    notes = np.array(["raw phase", np.ones((2, 2))], dtype=object)
    hdf5storage.savemat(
        path,
        {"phase": wrapped, "magnitude": np.ones(phase.shape), "info": info, "notes": notes},
        format="7.3",
        matlab_compatible=True,
    )
    assert read_mat(path)["phase"].shape == (5, 7, 1, 8, 3)  # the length-1 slice axis kept
    d = convert(path, preset="bioqic")
    assert d.u.shape == (1, 3, ROWS, COLS)
    np.testing.assert_allclose(d.u, u[..., 0], atol=1e-10)
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2e-3])
    np.testing.assert_array_equal(d.frequency, [40.0])


def test_structs_and_cells_are_named_at_any_depth(tmp_path):
    nested = {"scan": {"info": {"freq": 60.0}, "sizes": [1.0, 2.0]}}
    cell = np.array([np.arange(6.0).reshape(2, 3), "text", {"deep": 7.0}], dtype=object)
    for version in ("5", "7.3"):
        path = tmp_path / f"v{version}.mat"
        if version == "5":
            scipy.io.savemat(path, {**nested, "c": cell})
        else:
            hdf5storage.savemat(path, {**nested, "c": cell}, format="7.3", matlab_compatible=True)
        v = read_mat(path)
        assert v["scan.info.freq"] == 60.0, version
        np.testing.assert_array_equal(v["c{1}"], np.arange(6.0).reshape(2, 3))
        assert "c{2}" not in v and v["c{3}.deep"] == 7.0


def test_bioqic_errors_name_the_missing_pieces(tmp_path, rng):
    phase = _mdev_phase(_harmonic(rng, components=3, freqs=2))
    path = tmp_path / "p.mat"
    scipy.io.savemat(path, {"phase_unwrapped": phase, "info": {"dx_m": 2e-3, "dy_m": 1e-3}})
    with pytest.raises(DatasetError, match=r"not \['info.dz_m'\].*spacing="):
        convert(path, preset="bioqic", frequency=[30, 50])
    d = convert(path, preset="bioqic", frequency=[30, 50], spacing=[1, 2, 3], spacing_unit="mm")
    np.testing.assert_allclose(d.spacing, [1e-3, 2e-3, 3e-3])
    with pytest.raises(DatasetError, match="frequency"):
        convert(path, preset="bioqic", spacing=1e-3)
    with pytest.raises(DatasetError, match="preset must be one of"):
        convert(path, preset="mre")
    scipy.io.savemat(path, {"wave": phase, "magnitude": phase, "freq": [30, 50]})
    with pytest.raises(DatasetError, match="cannot pick the wave-field variable"):
        convert(path, preset="bioqic", spacing=1e-3)
    d = convert(path, preset="bioqic", variable="wave", spacing=1e-3)
    assert d.u.shape == (2, 3, ROWS, COLS, SLICES)


def test_cli_convert_preset_and_phase(tmp_path, rng):
    """``--preset bioqic`` reads the layout; ``--phase time`` unwraps a wrapped phase
    series that ``--axes`` names (a 4-D array, one component)."""
    u = _harmonic(rng, components=3, freqs=2)
    scipy.io.savemat(tmp_path / "b.mat", {"phase_unwrap_noipd": _mdev_phase(u), "info": INFO})
    out = tmp_path / "b.npz"
    assert main(["convert", str(tmp_path / "b.mat"), "--out", str(out), "--preset", "bioqic"]) == 0
    np.testing.assert_allclose(load(out).u, u, atol=1e-10)

    one = 2.5 * _harmonic(rng, components=1, freqs=1)[0, 0]  # (5, 7, 3), wraps
    series = _mdev_phase(one[None, None], offset=2.0)[..., 0, 0]  # (5, 7, 3, 8)
    scipy.io.savemat(tmp_path / "w.mat", {"ph": np.angle(np.exp(1j * series))})
    argv = ["convert", str(tmp_path / "w.mat"), "--out", str(out), "--axes", "xyzt"]
    argv += ["--frequency", "60", "--spacing", "1", "--spacing-unit", "mm", "--overwrite"]
    assert main([*argv, "--phase", "time"]) == 0
    np.testing.assert_allclose(load(out).u[0, 0], one, atol=1e-10)
    assert main(argv) == 0  # without --phase the wrapped images are taken as displacement
    assert not np.allclose(load(out).u[0, 0], one, atol=1e-3)


def test_cli_choices_match_the_library():
    convert_parser = build_parser()._subparsers._group_actions[0].choices["convert"]
    choices = {a.dest: a.choices for a in convert_parser._actions}
    assert tuple(choices["phase"]) == PHASE_MODES
    assert tuple(choices["preset"]) == tuple(PRESETS)
