"""Accuracy metrics against values worked out by hand on tiny grids."""

import json
import math

import numpy as np
import pytest

from helmholtz_pinn.data import Dataset
from helmholtz_pinn.metrics import (
    contrast_transfer,
    error_map_figure,
    evaluate,
    pearson_r,
    region_medians,
    relative_error_map,
)

# A 2x3 grid: background (1) on the first row, target 2 and target 3 on the second.
TRUE = np.array([[1000, 1000, 1000], [4000, 4000, 2000]], dtype=complex)  # Pa
PRED = np.array([[1100, 900, 600 + 800j], [3000, 5000, 2000]], dtype=complex)  # Pa
REGIONS = np.array([[1, 1, 1], [2, 2, 3]])
ALL = np.ones((2, 3), dtype=bool)

# Datasets need >= 3 voxels per axis: the same values plus a third row of wild values
# that the mask excludes, so every dataset metric equals the 2x3 one.
TRUE3 = np.vstack([TRUE, [[5000, 5000, 5000]]])
PRED3 = np.vstack([PRED, [[1e9, -1e9, 7]]])
REGIONS3 = np.vstack([REGIONS, [[1, 2, 3]]])
MASK3 = np.vstack([ALL, [[False, False, False]]])


def make_dataset(mu=TRUE3, regions=REGIONS3, mask=MASK3, n_freq=1):
    grid = mask.shape
    return Dataset(
        u=np.ones((n_freq, 1, *grid), dtype=complex),
        frequency=np.linspace(50.0, 70.0, n_freq),
        spacing=np.full(len(grid), 1e-3),
        mask=mask,
        mu=mu,
        regions=regions,
    )


def test_relative_error_map():
    err = relative_error_map(PRED.real, TRUE.real)
    np.testing.assert_allclose(err, [[0.1, 0.1, 0.4], [0.25, 0.25, 0.0]])
    # |600 + 800i| = 1000: the magnitude is exact there.
    err_abs = relative_error_map(np.abs(PRED), np.abs(TRUE))
    np.testing.assert_allclose(err_abs, [[0.1, 0.1, 0.0], [0.25, 0.25, 0.0]])
    with pytest.raises(ValueError, match="same shape"):
        relative_error_map(PRED, TRUE[0])


def test_pearson_r_hand_computed():
    pred = np.array([[1.0, 2.0, 3.0], [100.0, 0.0, 0.0]])
    true = np.array([[2.0, 4.0, 7.0], [-50.0, 0.0, 0.0]])
    mask = np.array([[True, True, True], [False, False, False]])
    # x - mean = (-1, 0, 1), y - mean = (-7, -1, 8) / 3: r = 5 / sqrt(2 * 114 / 9).
    assert pearson_r(pred, true, mask) == pytest.approx(15.0 / math.sqrt(228.0))
    assert pearson_r(pred, 3.0 * pred + 1.0, ALL) == pytest.approx(1.0)
    assert pearson_r(pred, -pred, ALL) == pytest.approx(-1.0)
    assert math.isnan(pearson_r(np.ones((2, 3)), true, ALL))
    with pytest.raises(ValueError, match="bool"):
        pearson_r(pred, true, mask.astype(int))


def test_region_medians():
    values = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])
    regions = np.array([[1, 1, 2], [2, 2, 3]])
    mask = np.array([[True, True, True], [True, True, False]])
    # Region 3 lies wholly outside the mask, so it is left out.
    assert region_medians(values, regions, mask) == {1: 1.5, 2: 10.0}
    # Label 0 (unlabelled) is ignored.
    assert region_medians(values, np.where(regions == 1, 0, regions), ALL) == {
        2: 10.0,
        3: 30.0,
    }


def test_contrast_transfer_hand_computed():
    ct = contrast_transfer(PRED.real, TRUE.real, REGIONS, ALL)
    # Background medians: pred 900, true 1000.
    assert ct == pytest.approx({2: (4000 - 900) / 3000, 3: (2000 - 900) / 1000})


def test_contrast_transfer_perfect_and_flat():
    assert contrast_transfer(TRUE.real, TRUE.real, REGIONS, ALL) == {2: 1.0, 3: 1.0}
    flat = np.full((2, 3), 2500.0)
    assert contrast_transfer(flat, TRUE.real, REGIONS, ALL) == {2: 0.0, 3: 0.0}
    with pytest.raises(ValueError, match="background"):
        contrast_transfer(flat, TRUE.real, REGIONS + 1, ALL)


def test_evaluate_values_and_json():
    out = evaluate(PRED3, make_dataset())
    assert set(out) == {
        "median_rel_error_storage",
        "mean_rel_error_storage",
        "median_rel_error_abs",
        "mean_rel_error_abs",
        "pearson_r_storage",
        "regions",
        "contrast_transfer",
    }
    # Storage errors sorted: 0, .1, .1, .25, .25, .4; magnitude errors: 0, 0, .1, .1, .25, .25.
    assert out["median_rel_error_storage"] == pytest.approx(0.175)
    assert out["mean_rel_error_storage"] == pytest.approx(1.1 / 6)
    assert out["median_rel_error_abs"] == pytest.approx(0.1)
    assert out["mean_rel_error_abs"] == pytest.approx(0.7 / 6)
    expected_r = np.corrcoef(PRED.real.ravel(), TRUE.real.ravel())[0, 1]
    assert out["pearson_r_storage"] == pytest.approx(expected_r)
    assert out["regions"] == {
        "1": pytest.approx(
            {
                "median_storage_pa": 900.0,
                "true_median_storage_pa": 1000.0,
                "median_rel_error_storage": 0.1,
            }
        ),
        "2": pytest.approx(
            {
                "median_storage_pa": 4000.0,
                "true_median_storage_pa": 4000.0,
                "median_rel_error_storage": 0.25,
            }
        ),
        "3": pytest.approx(
            {
                "median_storage_pa": 2000.0,
                "true_median_storage_pa": 2000.0,
                "median_rel_error_storage": 0.0,
            }
        ),
    }
    assert out["contrast_transfer"] == pytest.approx({"2": 3100 / 3000, "3": 1.1})
    text = json.dumps(out, allow_nan=False)
    assert json.loads(text) == out
    assert all(type(v) is float for k, v in out.items() if k.endswith(("storage", "abs")))


def test_evaluate_mask_and_no_regions():
    mask = MASK3.copy()
    mask[0, 2] = False  # drop the 40 % storage error
    out = evaluate(PRED3, make_dataset(regions=None, mask=mask))
    assert "regions" not in out and "contrast_transfer" not in out
    assert out["median_rel_error_storage"] == pytest.approx(0.1)
    assert out["mean_rel_error_storage"] == pytest.approx(0.7 / 5)


def test_evaluate_without_ground_truth():
    assert evaluate(PRED3, make_dataset(mu=None)) == {}


def test_evaluate_undefined_r_is_null():
    out = evaluate(np.full((3, 3), 1000.0 + 0j), make_dataset())
    assert out["pearson_r_storage"] is None
    json.dumps(out, allow_nan=False)


def test_evaluate_per_frequency_prediction():
    pred = np.stack([PRED3, TRUE3])
    out = evaluate(pred, make_dataset(n_freq=2))
    single = evaluate(PRED3, make_dataset(n_freq=2))
    assert "per_frequency" not in single
    assert {k: v for k, v in out.items() if k != "per_frequency"} == single
    assert [p["frequency_hz"] for p in out["per_frequency"]] == [50.0, 70.0]
    assert out["per_frequency"][0] == {"frequency_hz": 50.0, **single}
    assert out["per_frequency"][1]["median_rel_error_storage"] == 0.0
    assert out["per_frequency"][1]["contrast_transfer"] == {"2": 1.0, "3": 1.0}
    json.dumps(out, allow_nan=False)


def test_evaluate_per_frequency_truth():
    truth = np.stack([TRUE3, PRED3])
    out = evaluate(PRED3, make_dataset(mu=truth, n_freq=2))
    assert len(out["per_frequency"]) == 2
    assert out["median_rel_error_storage"] == pytest.approx(0.175)
    assert out["per_frequency"][1]["median_rel_error_abs"] == 0.0


def test_evaluate_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        evaluate(PRED3[:2], make_dataset())
    with pytest.raises(ValueError, match="frequencies"):
        evaluate(np.stack([PRED3] * 3), make_dataset(mu=np.stack([TRUE3] * 2), n_freq=2))


@pytest.mark.parametrize("grid", [(5, 4), (6, 5, 4)])
def test_error_map_figure_writes_png(tmp_path, grid):
    rng = np.random.default_rng(0)
    true = 3000.0 + 300j + 1000.0 * rng.random(grid)
    pred = true * (1.0 + 0.1 * rng.standard_normal(grid))
    mask = np.ones(grid, dtype=bool)
    mask.flat[0] = False
    ds = make_dataset(mu=true, regions=None, mask=mask)
    path = error_map_figure(pred, ds, tmp_path / "error.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Without ground truth only the recovered map is drawn.
    path = error_map_figure(
        pred, make_dataset(mu=None, regions=None, mask=mask), tmp_path / "r.png"
    )
    assert path.stat().st_size > 0
