"""Scanner-file conversion: MATLAB v5 and v7.3 (HDF5), multi-phase wave images, NIfTI
pairs. Files are written here; grids are non-symmetric (5 x 7 x 3) so that a swapped
axis cannot pass."""

import h5py
import nibabel as nib
import numpy as np
import pytest
import scipy.io

from helmholtz_pinn.cli.commands import main
from helmholtz_pinn.errors import MissingDependencyError
from helmholtz_pinn.io.convert import arrange, convert, first_harmonic, read_mat
from helmholtz_pinn.io.dataset import DatasetError, load, save

GRID = (5, 7, 3)


@pytest.fixture
def u_ref(rng):
    """Reference field, shape (F=2, C=3, 5, 7, 3)."""
    shape = (2, 3, *GRID)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _xyzcf(u):
    """(F, C, x, y, z) -> MATLAB-style (x, y, z, c, f)."""
    return np.transpose(u, (2, 3, 4, 1, 0))


def _write_mat73(path, variables):
    """Mimic MATLAB v7.3: HDF5 with a 512-byte user block holding MATLAB's header,
    reversed axes, complex as a ('real', 'imag') compound, numeric scalars as (1, 1)."""
    with h5py.File(path, "w", userblock_size=512) as f:
        for name, value in variables.items():
            a = np.atleast_2d(np.asarray(value))
            if a.dtype.kind == "c":
                compound = np.dtype([("real", "<f8"), ("imag", "<f8")])
                stored = np.empty(a.shape, compound)
                stored["real"], stored["imag"] = a.real, a.imag
                a = stored
            group, _, key = name.rpartition("/")
            target = f.require_group(group) if group else f
            ds = target.create_dataset(key, data=a.T)
            ds.attrs["MATLAB_class"] = np.bytes_("double")
        text = f.create_dataset("note", data=np.frombuffer(b"h\0i\0", "<u2")[:, None])
        text.attrs["MATLAB_class"] = np.bytes_("char")
    with open(path, "r+b") as f:  # MATLAB's 128-byte header: text, subsystem, v2.0, "IM"
        f.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(116) + b" " * 8 + b"\x00\x02IM")


# --- MATLAB v5 ---


def test_mat_complex_xyzcf(tmp_path, u_ref):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(
        path,
        {"U": _xyzcf(u_ref), "freq": [[40.0, 60.0]], "voxel_size": [1.5, 2.0, 2.5]},
    )
    d = convert(path, axes="xyzcf", spacing_unit="mm")
    assert d.u.shape == (2, 3, *GRID)
    np.testing.assert_array_equal(d.u, u_ref)
    # value at a specific index: MATLAB U(5, 7, 1, 3, 2) is u[f=1, c=2, 4, 6, 0]
    assert d.u[1, 2, 4, 6, 0] == _xyzcf(u_ref)[4, 6, 0, 2, 1]
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2.0e-3, 2.5e-3])
    np.testing.assert_array_equal(d.frequency, [40.0, 60.0])
    out = save(d, tmp_path / "wave.npz")
    np.testing.assert_array_equal(load(out).u, u_ref)


def test_mat_layout_must_be_given(tmp_path, u_ref):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": _xyzcf(u_ref), "freq": [40.0, 60.0]})
    with pytest.raises(DatasetError, match=r"\(5, 7, 3, 3, 2\).*axes"):
        convert(path, spacing=[1.5, 2.0, 2.5], spacing_unit="mm")


def test_mat_3d_array_is_ambiguous(tmp_path, u_ref):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": u_ref[0, 0], "freq": 60.0, "spacing": [1e-3] * 3})
    with pytest.raises(DatasetError, match=r"\(5, 7, 3\).*axes"):
        convert(path)
    assert convert(path, axes="xyz").grid == GRID
    assert convert(path, axes="xyc").u.shape == (1, 3, 5, 7)


@pytest.mark.parametrize("name", ["voxel_mm", "spacing_mm", "voxel_size_mm"])
def test_a_spacing_variable_named_in_mm_is_read_in_mm(tmp_path, u_ref, name):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": u_ref[0, 0, :, :, 0], name: [1.5, 1.5, 3.0]})
    d = convert(path, frequency=60.0)  # no spacing_unit: the name says mm
    np.testing.assert_allclose(d.spacing, [1.5e-3, 1.5e-3])
    np.testing.assert_allclose(convert(path, frequency=60.0, spacing_unit="mm").spacing, d.spacing)


def test_mat_units_and_missing_metadata(tmp_path, u_ref):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": u_ref[0, 0, :, :, 0], "pixel_spacing": [1.5, 1.5]})
    with pytest.raises(DatasetError, match="frequency"):
        convert(path)
    with pytest.raises(DatasetError, match="spacing_unit='mm'"):
        convert(path, frequency=[60.0])  # 1.5 read as metres
    d = convert(path, frequency=60.0, spacing_unit="mm")
    np.testing.assert_allclose(d.spacing, [1.5e-3, 1.5e-3])
    d = convert(path, frequency=60.0, spacing=[0.002, 0.001])  # argument wins, metres
    np.testing.assert_allclose(d.spacing, [2e-3, 1e-3])
    scipy.io.savemat(tmp_path / "bare.mat", {"U": u_ref[0, 0, :, :, 0]})
    with pytest.raises(DatasetError, match="spacing"):
        convert(tmp_path / "bare.mat", frequency=[60.0])


def test_mat_variable_choice(tmp_path, u_ref):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": u_ref[0, 0, :, :, 0], "magnitude": np.ones((5, 7))})
    kwargs = dict(frequency=[60.0], spacing=[1e-3, 1e-3])
    with pytest.raises(DatasetError, match="variable"):
        convert(path, **kwargs)
    np.testing.assert_array_equal(
        convert(path, variable="U", **kwargs).u[0, 0], u_ref[0, 0, :, :, 0]
    )
    with pytest.raises(DatasetError, match="'V'"):
        convert(path, variable="V", **kwargs)


def test_mat_struct_metadata_single_slice_and_mask(tmp_path, u_ref):
    """Frequency in a struct; a one-slice z axis gives a 2-D grid; mask follows the
    grid letters of ``axes``."""
    field = u_ref[0, :, :, :, :1]  # (c, x, y, z=1)
    mask = np.zeros((5, 7, 1), np.uint8)
    mask[1:4, 2:6] = 1
    path = tmp_path / "wave.mat"
    info = {"frequency": 50.0, "voxel_size": [1.0, 1.0, 5.0]}
    scipy.io.savemat(path, {"U": field, "info": info, "mask": mask})
    d = convert(path, axes="cxyz", spacing_unit="mm")
    assert d.u.shape == (1, 3, 5, 7)
    np.testing.assert_array_equal(d.u[0, 2], field[2, :, :, 0])
    np.testing.assert_allclose(d.spacing, [1e-3, 1e-3])
    np.testing.assert_array_equal(d.mask, mask[..., 0] > 0)
    np.testing.assert_array_equal(d.frequency, [50.0])


# --- MATLAB v7.3 (HDF5) ---


def test_a_truncated_mat73_file_is_called_truncated(tmp_path, u_ref):
    path = tmp_path / "cut73.mat"
    _write_mat73(path, {"U": _xyzcf(u_ref)})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"MATLAB v7.3 header over a truncated or corrupt"):
        convert(path, axes="xyzcf", spacing=[1, 1, 1], frequency=[40, 60])


def test_mat73_reversed_axes_and_compound_complex(tmp_path, u_ref):
    path = tmp_path / "wave73.mat"
    _write_mat73(
        path,
        {"U": _xyzcf(u_ref), "info/freq": [40.0, 60.0], "info/spacing": [1.5, 2.0, 2.5]},
    )
    variables = read_mat(path)
    assert "note" not in variables and variables["U"].shape == (5, 7, 3, 3, 2)
    d = convert(path, axes="xyzcf", spacing_unit="mm")
    np.testing.assert_array_equal(d.u, u_ref)
    assert d.u[0, 1, 3, 5, 2] == u_ref[0, 1, 3, 5, 2]
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2.0e-3, 2.5e-3])
    np.testing.assert_array_equal(d.frequency, [40.0, 60.0])


# --- multi-phase wave images ---


def _wave_images(u, n_phase, axis):
    """w_t = Re(u exp(2 pi i t / T)) stacked along ``axis``."""
    t = np.arange(n_phase) / n_phase
    w = [np.real(u * np.exp(2j * np.pi * k)) for k in t]
    return np.stack(w, axis=axis)


@pytest.mark.parametrize("n_phase", [3, 4, 8])
def test_first_harmonic_recovers_field(rng, u_ref, n_phase):
    w = _wave_images(u_ref, n_phase, axis=3)
    np.testing.assert_allclose(first_harmonic(w, axis=3), u_ref, atol=1e-6, rtol=0)


def test_first_harmonic_needs_three_phases(u_ref):
    with pytest.raises(DatasetError, match="'t'"):
        first_harmonic(_wave_images(u_ref, 2, axis=0), axis=0)


def test_mat_multiphase_bioqic_layout(tmp_path, u_ref):
    """Real wave images in the BIOQIC order (f, c, t, z, x, y)."""
    w = _wave_images(u_ref, 8, axis=2)  # (f, c, t, x, y, z)
    w = np.transpose(w, (0, 1, 2, 5, 3, 4))  # (f, c, t, z, x, y)
    mask = np.ones((3, 5, 7), bool)  # (z, x, y)
    mask[1, 0, 6] = False
    path = tmp_path / "phantom.mat"
    scipy.io.savemat(path, {"phase": w, "freq": [40, 60], "voxel_size": 1.5, "mask": mask})
    d = convert(path, axes="fctzxy", spacing_unit="mm")
    np.testing.assert_allclose(d.u, u_ref, atol=1e-6, rtol=0)
    assert not d.mask[0, 6, 1] and d.mask.sum() == d.mask.size - 1
    np.testing.assert_allclose(d.spacing, [1.5e-3] * 3)
    with pytest.raises(DatasetError, match="real .*'t'"):
        arrange(w[:, :, 0], "fczxy")  # one real phase image is not a complex field


def test_arrange_rejects_bad_axes(u_ref):
    array = _xyzcf(u_ref)
    for axes in ("xyzc", "xyzcc", "xyzcq", "zzzcf", "czfty", "XYZCF"):
        with pytest.raises(DatasetError, match=r"axes .*\(5, 7, 3, 3, 2\)"):
            arrange(array, axes)


# --- NIfTI ---


def _write_nifti(path, data, zooms_mm, unit="mm"):
    img = nib.Nifti1Image(data, np.diag([*zooms_mm, 1.0]))
    img.header.set_xyzt_units(unit)
    nib.save(img, path)
    return path


def test_nifti_real_imag_pair(tmp_path, u_ref):
    field = u_ref[0, 0]  # (5, 7, 3)
    re = _write_nifti(tmp_path / "wave_real.nii.gz", field.real, (1.5, 2.0, 2.5))
    im = _write_nifti(tmp_path / "wave_imag.nii.gz", field.imag, (1.5, 2.0, 2.5))
    d = convert([re, im], frequency=[60.0])
    assert d.u.shape == (1, 1, *GRID)
    np.testing.assert_allclose(d.u[0, 0], field, rtol=1e-12)
    assert d.u[0, 0, 4, 1, 2] == pytest.approx(field[4, 1, 2])
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2.0e-3, 2.5e-3])
    with pytest.raises(DatasetError, match="frequency"):
        convert([re, im])
    d = convert([re, im], frequency=[60.0], spacing=[1.0, 1.0, 1.0], spacing_unit="mm")
    np.testing.assert_allclose(d.spacing, [1e-3] * 3)


def test_nifti_magnitude_phase_pair(tmp_path, u_ref):
    field = u_ref[1, 2]
    mag = _write_nifti(tmp_path / "mag.nii", np.abs(field), (2.0, 2.0, 2.0))
    pha = _write_nifti(tmp_path / "phase.nii", np.angle(field), (2.0, 2.0, 2.0))
    d = convert([mag, pha], frequency=[50.0])
    np.testing.assert_allclose(d.u[0, 0], field, rtol=1e-12)
    np.testing.assert_allclose(d.spacing, [2e-3] * 3)
    degrees = _write_nifti(tmp_path / "deg.nii", np.degrees(np.angle(field)), (2.0,) * 3)
    with pytest.raises(DatasetError, match="radians"):
        convert([mag, degrees], kind="nifti-polar", frequency=[50.0])


def test_nifti_header_unit_metres(tmp_path, u_ref):
    field = u_ref[0, 0]
    re = _write_nifti(tmp_path / "re.nii", field.real, (0.0015, 0.002, 0.0025), unit="meter")
    im = _write_nifti(tmp_path / "im.nii", field.imag, (0.0015, 0.002, 0.0025), unit="meter")
    d = convert([re, im], frequency=[60.0])
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2.0e-3, 2.5e-3])


def test_nifti_components_need_axes(tmp_path, u_ref):
    field = np.moveaxis(u_ref[0], 0, -1)  # (5, 7, 3, c=3)
    re = _write_nifti(tmp_path / "u_real.nii", field.real, (1.0, 1.0, 1.0))
    im = _write_nifti(tmp_path / "u_imag.nii", field.imag, (1.0, 1.0, 1.0))
    with pytest.raises(DatasetError, match=r"\(5, 7, 3, 3\).*axes"):
        convert([re, im], frequency=[60.0])
    d = convert([re, im], axes="xyzc", frequency=[60.0])
    np.testing.assert_allclose(d.u[0], u_ref[0], rtol=1e-12)
    assert d.u[0, 1, 2, 6, 1] == pytest.approx(u_ref[0, 1, 2, 6, 1])


def test_nifti_pair_kind_from_names(tmp_path, u_ref):
    a = _write_nifti(tmp_path / "first.nii", u_ref[0, 0].real, (1.0,) * 3)
    b = _write_nifti(tmp_path / "second.nii", u_ref[0, 0].imag, (1.0,) * 3)
    with pytest.raises(DatasetError, match="kind"):
        convert([a, b], frequency=[60.0])
    d = convert([a, b], kind="nifti-complex", frequency=[60.0])
    np.testing.assert_allclose(d.u[0, 0], u_ref[0, 0], rtol=1e-12)


def test_missing_input(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        convert(tmp_path / "absent.mat")


def test_single_complex_nifti_vector_layout(tmp_path, u_ref):
    """NIfTI vectors: (x, y, z, t=1, c); '-' drops the empty time axis."""
    field = np.moveaxis(u_ref[1], 0, -1)[:, :, :, None, :]  # (5, 7, 3, 1, 3)
    path = _write_nifti(tmp_path / "wave.nii.gz", field.astype(np.complex128), (1.5,) * 3)
    d = convert(path, axes="xyz-c", frequency=[60.0])
    assert d.u.shape == (1, 3, *GRID)
    np.testing.assert_array_equal(d.u[0], u_ref[1])
    with pytest.raises(DatasetError, match="'-'"):
        convert(path, axes="xy-zc", frequency=[60.0])  # '-' on an axis of length 3


def test_complex_with_phase_axis_is_refused(u_ref):
    with pytest.raises(DatasetError, match="'t'"):
        arrange(u_ref[0], "cxyt")


# --- MR phase images over time: unwrapping, offset and drift ---


def _phase_series(u, offset, trend, n_steps):
    """phi_t = offset + trend t + Re(u exp(2 pi i t / T)), t = 0..T-1 on a new axis 0."""
    t = np.arange(n_steps).reshape(-1, *([1] * u.ndim))
    return offset + trend * t + np.real(u * np.exp(2j * np.pi * t / n_steps))


def _wrap(phi):
    return np.angle(np.exp(1j * phi))


@pytest.fixture
def phase_case(rng):
    """u_true (5, 7, 3) with |u| in [1.5, 4] rad, offsets in [-2, 2] rad, drift 0.05
    rad/step, T = 16: the phase leaves [-pi, pi] (so it wraps) while each voxel moves
    less than pi per time step (so unwrapping along time is exact)."""
    u = rng.uniform(1.5, 4.0, GRID) * np.exp(2j * np.pi * rng.uniform(size=GRID))
    phi = _phase_series(u, rng.uniform(-2, 2, GRID), 0.05, 16)
    assert np.abs(phi).max() > 1.5 * np.pi and np.abs(np.diff(phi, axis=0)).max() < np.pi
    return u, phi


def test_wrapped_phase_unwrapped_along_time(tmp_path, phase_case):
    """Wrapped magnitude + phase NIfTI pair over time -> u_true to 1e-9 rad; the same
    data taken as displacement (no unwrapping, no drift removal) is far off."""
    u_true, phi = phase_case
    wrapped = np.moveaxis(_wrap(phi), 0, -1)  # (x, y, z, t)
    assert np.abs(wrapped).max() <= np.pi and not np.allclose(wrapped, np.moveaxis(phi, 0, -1))
    mag = _write_nifti(tmp_path / "mag.nii", np.ones_like(wrapped), (2.0,) * 3)
    pha = _write_nifti(tmp_path / "phase.nii", wrapped, (2.0,) * 3)
    d = convert([mag, pha], axes="xyzt", frequency=[50.0])  # default phase="auto"
    np.testing.assert_allclose(d.u[0, 0], u_true, atol=1e-9, rtol=0)
    path = tmp_path / "phase.mat"
    scipy.io.savemat(path, {"ph": wrapped, "freq": 50.0, "voxel_size": 2.0})
    d = convert(path, axes="xyzt", spacing_unit="mm", phase="time")
    np.testing.assert_allclose(d.u[0, 0], u_true, atol=1e-9, rtol=0)
    naive = convert(path, axes="xyzt", spacing_unit="mm")  # displacement images
    assert np.abs(naive.u[0, 0] - u_true).max() > 1.0


def test_u_keeps_the_sources_precision_on_every_path(tmp_path, phase_case):
    """Single-precision phase over time (unwrapped and transformed in float64) gives
    complex64 like a single-precision complex field; double data give complex128."""
    u_true, phi = phase_case
    wrapped = np.moveaxis(_wrap(phi), 0, -1)
    for dtype, expected in ((np.float32, np.complex64), (np.float64, np.complex128)):
        path = tmp_path / f"phase_{np.dtype(dtype).name}.mat"
        scipy.io.savemat(path, {"ph": wrapped.astype(dtype), "freq": 50.0, "voxel_size": 2.0})
        d = convert(path, axes="xyzt", spacing_unit="mm", phase="time")
        assert d.u.dtype == expected
    field = tmp_path / "single.mat"
    scipy.io.savemat(field, {"U": u_true.astype(np.complex64), "freq": 50.0, "voxel_size": 2.0})
    assert convert(field, axes="xyz", spacing_unit="mm").u.dtype == np.complex64


def test_already_unwrapped_phase_accepted(tmp_path, phase_case):
    """|phase| > 2 pi in radians is no longer refused: over time (phase='auto' sees
    |phase| > pi and takes it as unwrapped) and as a first-harmonic phase map."""
    u_true, phi = phase_case
    phi = phi + 2 * np.pi  # still a valid unwrapped series, now beyond 2 pi
    assert np.abs(phi).max() > 2 * np.pi
    mag = _write_nifti(tmp_path / "mag.nii", np.ones(GRID + (16,)), (2.0,) * 3)
    pha = _write_nifti(tmp_path / "phase.nii", np.moveaxis(phi, 0, -1), (2.0,) * 3)
    d = convert([mag, pha], axes="xyzt", frequency=[50.0])
    np.testing.assert_allclose(d.u[0, 0], u_true, atol=1e-9, rtol=0)
    field = u_true  # complex pair: phase angle + 4 pi is the same field
    mag = _write_nifti(tmp_path / "m.nii", np.abs(field), (2.0,) * 3)
    pha = _write_nifti(tmp_path / "p.nii", np.angle(field) + 4 * np.pi, (2.0,) * 3)
    d = convert([mag, pha], kind="nifti-polar", frequency=[50.0])
    np.testing.assert_allclose(d.u[0, 0], field, rtol=1e-12)
    with pytest.raises(DatasetError, match="'t'"):
        convert([mag, pha], kind="nifti-polar", frequency=[50.0], phase="time")


@pytest.mark.parametrize("grid", [(24, 20), (24, 20, 4)])
def test_spatially_wrapped_phase(grid):
    """A plane wave of amplitude 2.5 pi rad, one wavelength over 24 voxels, T = 6:
    neighbouring voxels differ by < pi (spatial unwrapping is exact), time steps by up
    to 2.5 pi (unwrapping along time fails). phase='space' recovers u_true to 1e-8."""
    x, y = np.meshgrid(*[np.arange(n, dtype=float) for n in grid[:2]], indexing="ij")
    if len(grid) == 3:
        x, y = x[..., None] + np.zeros(grid), y[..., None] + np.zeros(grid)
    u_true = 2.5 * np.pi * (1 + 0.2 * y / grid[1]) * np.exp(2j * np.pi * x / 24)
    phi = _phase_series(u_true, 1.0 + 0.05 * x, 0.1, 6)  # (t, *grid)
    wrapped = _wrap(phi)
    axes = "t" + "xyz"[: len(grid)]
    u = arrange(wrapped, axes, phase="space")
    np.testing.assert_allclose(u[0, 0], u_true, atol=1e-8, rtol=0)
    assert np.abs(arrange(wrapped, axes, phase="time")[0, 0] - u_true).max() > 1.0


def test_phase_drift_needs_four_steps_and_scikit_image(monkeypatch, rng):
    """T = 3: only the offset is removed (exact without drift); a missing scikit-image
    is a MissingDependencyError naming the pip command."""
    u = rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))
    phi = _phase_series(u, 0.7, 0.0, 3)
    np.testing.assert_allclose(arrange(phi, "txy", phase="unwrapped")[0, 0], u, atol=1e-12)
    monkeypatch.setitem(__import__("sys").modules, "skimage.restoration", None)
    with pytest.raises(MissingDependencyError, match="pip install scikit-image"):
        arrange(_wrap(phi), "txy", phase="space")


# --- command line ---


def test_cli_converts_mat_file(tmp_path, u_ref):
    """``helmholtz-pinn convert`` end to end: .mat in, dataset .npz out (metres)."""
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": u_ref[0, 0, :, :, 0]})  # complex (5, 7)
    argv = ["convert", str(path), "--out", str(tmp_path / "d.npz"), "--frequency", "60"]
    assert main([*argv, "--spacing", "1", "--spacing-unit", "mm"]) == 0
    d = load(tmp_path / "d.npz")
    assert d.u.shape == (1, 1, 5, 7)
    np.testing.assert_array_equal(d.u[0, 0], u_ref[0, 0, :, :, 0])
    np.testing.assert_array_equal(d.frequency, [60.0])
    np.testing.assert_allclose(d.spacing, [1e-3, 1e-3])


def test_cli_converts_nifti_pair(tmp_path, u_ref):
    field = np.moveaxis(u_ref[0], 0, -1)  # (5, 7, 3, c=3)
    re = _write_nifti(tmp_path / "u_real.nii.gz", field.real, (1.5, 2.0, 2.5))
    im = _write_nifti(tmp_path / "u_imag.nii.gz", field.imag, (1.5, 2.0, 2.5))
    out = tmp_path / "d.npz"
    argv = ["convert", str(re), str(im), "--out", str(out), "--axes", "xyzc"]
    assert main([*argv, "--frequency", "50"]) == 0
    d = load(out)
    assert d.u.shape == (1, 3, *GRID)
    np.testing.assert_allclose(d.u[0], u_ref[0], rtol=1e-12)
    np.testing.assert_array_equal(d.frequency, [50.0])
    np.testing.assert_allclose(d.spacing, [1.5e-3, 2.0e-3, 2.5e-3])
