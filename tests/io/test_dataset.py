"""Dataset validation and the ``.npz`` contract: round trips, one error per class, and
a property test that malformed input only ever raises DatasetError."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmholtz_pinn.io.dataset import Dataset, DatasetError, load, save, z_slices


def _u(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _fields(rng, grid=(6, 5), n_freq=2, n_comp=3):
    return dict(
        u=_u(rng, (n_freq, n_comp, *grid)),
        frequency=np.linspace(40.0, 80.0, n_freq),
        spacing=np.full(len(grid), 1.5e-3),
    )


def _assert_same(a: Dataset, b: Dataset) -> None:
    for field in ("u", "frequency", "spacing", "mask", "mu", "regions", "affine"):
        x, y = getattr(a, field), getattr(b, field)
        if x is None:
            assert y is None, field
        else:
            assert x.dtype == y.dtype and x.shape == y.shape, field
            np.testing.assert_array_equal(x, y, err_msg=field)
    assert a.rho == b.rho


# --- construction and normalisation ---


def test_normalises_fields(rng):
    d = Dataset(
        u=_u(rng, (1, 2, 4, 5), np.complex64),
        frequency=[60],
        spacing=(1e-3, 2e-3),
        mu=np.full((4, 5), 3e3),
        regions=np.ones((4, 5), dtype=np.uint8),
        rho=1000,
    )
    assert d.u.dtype == np.complex64
    assert d.frequency.dtype == np.float64 and d.spacing.dtype == np.float64
    assert d.mask.dtype == bool and d.mask.all() and d.mask.shape == (4, 5)
    assert d.mu.dtype == np.complex128 and d.regions.dtype == np.int64
    assert isinstance(d.rho, float)
    assert (d.grid, d.ndim, d.n_freq, d.n_comp) == ((4, 5), 2, 1, 2)


def test_mask_accepts_zero_one_integers(rng):
    mask = np.zeros((6, 5), dtype=np.int32)
    mask[2:4, 1:3] = 1
    d = Dataset(**_fields(rng), mask=mask)
    assert d.mask.dtype == bool and d.mask.sum() == 4


def test_real_u_message_names_dtype_and_shape():
    with pytest.raises(DatasetError) as err:
        Dataset(u=np.zeros((80, 100), np.float32), frequency=[60.0], spacing=[1e-3, 1e-3])
    assert str(err.value) == (
        "u must be complex with shape (F, C, nx, ny) or (F, C, nx, ny, nz); got float32 (80, 100)"
    )


def _override(rng, **changes):
    fields = _fields(rng)
    fields.update(changes)
    return fields


BAD_FIELDS = {
    "u real": ("u", lambda r: {"u": np.ones((2, 3, 6, 5))}),
    "u rank 3": ("u", lambda r: {"u": _u(r, (2, 6, 5))}),
    "u rank 6": ("u", lambda r: {"u": _u(r, (2, 3, 6, 5, 4, 4))}),
    "u NaN": ("u", lambda r: {"u": np.where(np.eye(6, 5) > 0, np.nan, _u(r, (2, 3, 6, 5)))}),
    "u Inf": ("u", lambda r: {"u": np.full((2, 3, 6, 5), np.inf + 0j)}),
    "u no frequency": ("u", lambda r: {"u": _u(r, (0, 3, 6, 5)), "frequency": []}),
    "grid too small": ("u", lambda r: {"u": _u(r, (2, 3, 6, 2))}),
    "frequency shape": ("frequency", lambda r: {"frequency": [60.0]}),
    "frequency 2-D": ("frequency", lambda r: {"frequency": [[40.0, 80.0]]}),
    "frequency zero": ("frequency", lambda r: {"frequency": [0.0, 60.0]}),
    "frequency negative": ("frequency", lambda r: {"frequency": [-60.0, 60.0]}),
    "frequency NaN": ("frequency", lambda r: {"frequency": [np.nan, 60.0]}),
    "frequency text": ("frequency", lambda r: {"frequency": ["60", "70"]}),
    "spacing shape": ("spacing", lambda r: {"spacing": [1e-3, 1e-3, 1e-3]}),
    "spacing zero": ("spacing", lambda r: {"spacing": [0.0, 1e-3]}),
    "spacing negative": ("spacing", lambda r: {"spacing": [1e-3, -1e-3]}),
    "spacing Inf": ("spacing", lambda r: {"spacing": [np.inf, 1e-3]}),
    "mask shape": ("mask", lambda r: {"mask": np.ones((5, 6), bool)}),
    "mask values": ("mask", lambda r: {"mask": np.full((6, 5), 0.5)}),
    "mask empty": ("mask", lambda r: {"mask": np.zeros((6, 5), bool)}),
    "mu shape": ("mu", lambda r: {"mu": np.ones((3, 6, 5))}),
    "mu NaN": ("mu", lambda r: {"mu": np.full((6, 5), np.nan)}),
    "regions shape": ("regions", lambda r: {"regions": np.ones((6, 4), int)}),
    "regions fractional": ("regions", lambda r: {"regions": np.full((6, 5), 1.5)}),
    "rho zero": ("rho", lambda r: {"rho": 0.0}),
    "rho negative": ("rho", lambda r: {"rho": -1000.0}),
    "rho NaN": ("rho", lambda r: {"rho": np.nan}),
    "rho array": ("rho", lambda r: {"rho": np.array([1000.0, 1000.0])}),
    "affine shape": ("affine", lambda r: {"affine": np.eye(3)}),
    "affine last row": ("affine", lambda r: {"affine": np.ones((4, 4))}),
    "affine singular": ("affine", lambda r: {"affine": np.diag([1.0, 1.0, 0.0, 1.0])}),
}


@pytest.mark.parametrize("case", sorted(BAD_FIELDS))
def test_each_error_names_its_key(rng, case):
    key, change = BAD_FIELDS[case]
    with pytest.raises(DatasetError) as err:
        Dataset(**_override(rng, **change(rng)))
    message = str(err.value)
    assert key in message and "\n" not in message


# --- files ---


@pytest.mark.parametrize("grid", [(6, 5), (5, 7, 3)])
def test_round_trip(tmp_path, rng, grid):
    regions = np.ones(grid, dtype=np.int64)
    regions[1:3, 1:3] = 2
    full = Dataset(
        **_fields(rng, grid),
        mask=rng.random(grid) > 0.2,
        mu=3e3 + 1j * rng.random((2, *grid)),
        regions=regions,
        rho=1050.0,
        affine=np.array([[0, -2, 0, 10], [1.5, 0, 0, -5], [0, 0, 3, 2], [0, 0, 0, 1.0]]),
    )
    minimal = Dataset(**_fields(rng, grid))
    for d in (full, minimal):
        path = save(d, tmp_path / "d.npz")
        _assert_same(d, load(path))
    with np.load(tmp_path / "d.npz") as npz:  # minimal: optional None keys omitted
        assert sorted(npz.files) == ["frequency", "mask", "rho", "spacing", "u"]


def test_round_trip_keeps_complex64(tmp_path, rng):
    d = Dataset(u=_u(rng, (1, 1, 4, 4), np.complex64), frequency=[50.0], spacing=[1e-3] * 2)
    assert load(save(d, tmp_path / "d.npz")).u.dtype == np.complex64


def test_bare_2d_u_is_one_field(tmp_path, rng):
    u = _u(rng, (6, 5))
    np.savez(tmp_path / "d.npz", u=u, frequency=[60.0], spacing=[1e-3, 1e-3])
    d = load(tmp_path / "d.npz")
    assert d.u.shape == (1, 1, 6, 5)
    np.testing.assert_array_equal(d.u[0, 0], u)


def test_bare_2d_u_needs_2d_spacing(tmp_path, rng):
    np.savez(tmp_path / "d.npz", u=_u(rng, (6, 5)), frequency=[60.0], spacing=[1e-3] * 3)
    with pytest.raises(DatasetError, match=r"u .*\(F, C, nx, ny\)"):
        load(tmp_path / "d.npz")


def test_3d_u_is_ambiguous(tmp_path, rng):
    np.savez(tmp_path / "d.npz", u=_u(rng, (6, 5, 3)), frequency=[60.0], spacing=[1e-3] * 3)
    with pytest.raises(DatasetError, match=r"ambiguous.*\(F, C, \*grid\)"):
        load(tmp_path / "d.npz")


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        load(tmp_path / "absent.npz")


@pytest.mark.parametrize("name", ["scan.mat", "scan.nii.gz", "scan.txt"])
def test_other_extensions_point_to_convert(tmp_path, name):
    (tmp_path / name).write_bytes(b"not a dataset")
    with pytest.raises(DatasetError, match="helmholtz-pinn convert"):
        load(tmp_path / name)


def test_non_npz_content(tmp_path):
    (tmp_path / "text.npz").write_text("u,frequency\n1,2\n")
    np.save(tmp_path / "array.npy", np.ones(3))
    (tmp_path / "array.npy").rename(tmp_path / "array.npz")
    for name, what in (("text.npz", "not a zip archive"), ("array.npz", "a .npy array")):
        with pytest.raises(DatasetError, match=name) as err:
            load(tmp_path / name)
        assert f"is not an .npz file ({what})" in str(err.value)
        assert "pickle" not in str(err.value)


def test_truncated_file(tmp_path, rng):
    path = save(Dataset(**_fields(rng)), tmp_path / "d.npz")
    data = path.read_bytes()
    for cut in (len(data) // 2, 10, len(data) - 30):
        path.write_bytes(data[:cut])
        with pytest.raises(DatasetError, match="d.npz"):
            load(path)


def test_missing_key_is_named_with_keys_found(tmp_path, rng):
    np.savez(tmp_path / "d.npz", u=_u(rng, (1, 1, 4, 4)), spacing=[1e-3] * 2)
    with pytest.raises(DatasetError, match=r"'frequency'.*\['spacing', 'u'\]"):
        load(tmp_path / "d.npz")


def test_object_array_is_refused(tmp_path):
    u = np.empty(2, dtype=object)
    np.savez(tmp_path / "d.npz", u=u, frequency=[60.0], spacing=[1e-3] * 2)
    with pytest.raises(DatasetError, match="'u'.*object"):
        load(tmp_path / "d.npz")


def test_invalid_array_in_file_names_path_and_key(tmp_path, rng):
    np.savez(tmp_path / "d.npz", u=_u(rng, (1, 1, 4, 4)), frequency=[-5.0], spacing=[1e-3] * 2)
    with pytest.raises(DatasetError, match="d.npz: frequency"):
        load(tmp_path / "d.npz")


def test_save_requires_npz_suffix(tmp_path, rng):
    with pytest.raises(DatasetError, match=".npz"):
        save(Dataset(**_fields(rng)), tmp_path / "d.dat")


# --- property: malformed input raises DatasetError and nothing else ---

DTYPES = [np.complex64, np.complex128, np.float32, np.float64, np.int32, np.bool_]


@st.composite
def _arrays(draw, max_rank=6):
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=max_rank)))
    dtype = draw(st.sampled_from(DTYPES))
    special = draw(st.sampled_from([None, np.nan, np.inf, 0.0, -1.0]))
    values = np.random.default_rng(draw(st.integers(0, 2**16))).standard_normal(shape)
    if special is not None and values.size:
        values.flat[draw(st.integers(0, values.size - 1))] = special
    with np.errstate(invalid="ignore"):
        return values.astype(dtype) if dtype != np.bool_ else values > 0


@st.composite
def _malformed(draw):
    """Valid fields, each replaced by a random (mostly invalid) one a quarter of the time."""
    n_freq, n_comp = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    grid = tuple(draw(st.lists(st.integers(2, 5), min_size=2, max_size=3)))
    vector = st.one_of(
        _arrays(max_rank=2),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4),
    )

    def maybe(valid, bad):
        return draw(bad) if draw(st.integers(0, 3)) == 0 else valid

    return dict(
        u=maybe(np.ones((n_freq, n_comp, *grid), np.complex64), _arrays()),
        frequency=maybe(np.full(n_freq, 60.0), vector),
        spacing=maybe(np.full(len(grid), 1e-3), vector),
        mask=maybe(None, st.one_of(st.just(np.ones(grid, bool)), _arrays(4))),
        mu=maybe(None, st.one_of(st.just(np.ones(grid)), _arrays(4))),
        regions=maybe(None, st.one_of(st.just(np.ones(grid, int)), _arrays(4))),
        rho=maybe(1000.0, st.one_of(st.floats(allow_nan=True), _arrays(1))),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_malformed())
def test_malformed_input_only_raises_dataset_error(fields):
    try:
        d = Dataset(**fields)
    except DatasetError:
        return
    assert d.u.dtype.kind == "c" and d.u.ndim in (4, 5) and min(d.grid) >= 3
    assert np.isfinite(d.u).all() and d.mask.shape == d.grid and d.mask.any()
    assert d.frequency.shape == (d.n_freq,) and (d.frequency > 0).all()
    assert d.spacing.shape == (d.ndim,) and (d.spacing > 0).all()
    assert np.isfinite(d.rho) and d.rho > 0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_malformed())
def test_malformed_file_only_raises_dataset_error(tmp_path_factory, fields):
    path = tmp_path_factory.mktemp("npz") / "d.npz"
    with np.errstate(invalid="ignore"):
        np.savez(path, **{k: np.asarray(v) for k, v in fields.items() if v is not None})
    try:
        d = load(path)
    except DatasetError:
        return
    assert d.u.ndim in (4, 5) and np.isfinite(d.u).all()


def test_z_slices_move_the_affine_origin_along_z(rng):
    """Slice k of a volume lies k voxels along the affine's third column."""
    affine = np.array([[0, -2, 0, 10], [1.5, 0, 0, -5], [0, 0, 3, 2], [0, 0, 0, 1.0]])
    mask = np.ones((5, 7, 3), bool)
    mask[..., 1] = False  # an empty slice is left out
    volume = Dataset(**_fields(rng, (5, 7, 3)), mask=mask, affine=affine)
    slices, keep = z_slices(volume)
    assert keep == [0, 2]
    np.testing.assert_allclose(slices[1].affine[:3, 3], [10, -5, 2 + 2 * 3])
    np.testing.assert_allclose(slices[1].affine[:3, :3], affine[:3, :3])


def test_the_stored_example_loads_and_unknown_names_are_listed():
    """The packaged elastic example: 3 components on 30 x 36 voxels of 2 mm at 80 and
    100 Hz, with its true modulus and regions; an unknown name lists the valid ones."""
    from helmholtz_pinn.io.dataset import EXAMPLES, example

    d = example("elastic-two-ellipse-slice")
    assert d.u.shape == (2, 3, 30, 36) and d.frequency.tolist() == [80.0, 100.0]
    np.testing.assert_allclose(d.spacing, [2e-3, 2e-3])
    assert d.mu is not None and sorted(np.unique(d.regions).tolist()) == [1, 2, 3]
    with pytest.raises(
        DatasetError, match="unknown example 'nope'; valid names: " + next(iter(EXAMPLES))
    ):
        example("nope")


def test_a_failed_write_leaves_no_truncated_file(tmp_path, monkeypatch):
    """A full disk half-way through ``save`` (convert and simulate write through it):
    one OutputError line, and the earlier file at the path is untouched."""
    import errno

    from helmholtz_pinn.errors import OutputError
    from helmholtz_pinn.io import dataset as ds

    good = ds.example("elastic-two-ellipse-slice")
    path = ds.save(good, tmp_path / "d.npz")
    before = path.read_bytes()
    real = np.savez

    def half_then_full(f, **arrays):
        real(f, u=arrays["u"])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", half_then_full)
    with pytest.raises(OutputError, match="No space left on device"):
        ds.save(good, path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["d.npz"]


def test_a_key_under_a_common_other_name_gets_a_rename_hint(tmp_path):
    path = tmp_path / "freq.npz"
    np.savez(path, u=np.ones((1, 1, 4, 4), complex), freq=[60.0], spacing=[1e-3, 1e-3])
    with pytest.raises(DatasetError) as err:
        load(path)
    message = str(err.value)
    assert "missing required key 'frequency'" in message
    assert "rename 'freq' to 'frequency'" in message and "docs/data-format.md" in message
