"""A tissue mask from magnitude images (``convert(..., mask_from="magnitude")``,
``convert --mask-from-magnitude``): Otsu threshold, holes filled, largest region."""

import nibabel as nib
import numpy as np
import pytest
import scipy.io

from helmholtz_pinn.cli.commands import main
from helmholtz_pinn.io import masks
from helmholtz_pinn.io.convert import convert
from helmholtz_pinn.io.dataset import DatasetError, load

GRID = (24, 20, 4)


def _tissue(rng):
    """A bright ellipse (the tissue) with a dark vessel inside, a small bright blob
    outside it, noise everywhere; returns (magnitude on GRID, the true tissue mask)."""
    i, j = np.meshgrid(np.arange(GRID[0]), np.arange(GRID[1]), indexing="ij")
    ellipse = ((i - 11) / 8.0) ** 2 + ((j - 9) / 6.0) ** 2 <= 1
    vessel = (i - 11) ** 2 + (j - 9) ** 2 <= 2
    blob = (i - 22) ** 2 + (j - 18) ** 2 <= 1
    image = 100.0 * (ellipse & ~vessel) + 80.0 * blob + 5.0
    truth = np.repeat(ellipse[..., None], GRID[2], axis=2)
    magnitude = image[..., None] + rng.normal(0, 3.0, GRID)
    return np.abs(magnitude), truth


def test_the_mask_is_the_tissue_with_its_holes_and_without_stray_blobs(rng):
    magnitude, truth = _tissue(rng)
    series = np.stack([magnitude * s for s in (0.9, 1.0, 1.1)], axis=3)  # x y z t
    mask = masks.from_magnitude(series, "xyzt")
    np.testing.assert_array_equal(mask, truth)  # vessel inside, blob outside
    # the non-grid axes are averaged away in any order; grid axes come out as x, y, z
    swapped = masks.from_magnitude(np.moveaxis(series, 3, 0), "txyz")
    np.testing.assert_array_equal(swapped, truth)


def test_bioqic_magnitude_and_nifti_pair_give_the_mask(tmp_path, rng):
    """A BIOQIC-style MAT file (magnitude laid out like the 6-D phase) and a
    magnitude/phase NIfTI pair through the CLI both carry the tissue mask."""
    magnitude, truth = _tissue(rng)
    t, c, f = 6, 3, 1
    phase = rng.uniform(-0.5, 0.5, GRID + (t, c, f))
    mag6 = np.broadcast_to(magnitude[..., None, None, None], phase.shape).copy()
    info = {"frequencies_Hz": np.array([[50.0]]), "dx_m": 1e-3, "dy_m": 1e-3, "dz_m": 1e-3}
    path = tmp_path / "phantom.mat"
    scipy.io.savemat(path, {"phase_unwrap_noipd": phase, "magnitude": mag6, "info": info})
    d = convert(path, preset="bioqic", mask_from="magnitude")
    np.testing.assert_array_equal(d.mask, truth)
    plain = convert(path, preset="bioqic")
    assert plain.mask.all()  # without the option: every voxel, as before
    affine = np.diag([1.0, 1.0, 1.0, 1.0])
    nib.save(nib.Nifti1Image(magnitude.astype(np.float32), affine), tmp_path / "mag.nii")
    nib.save(nib.Nifti1Image(np.zeros(GRID, np.float32), affine), tmp_path / "phase.nii")
    out = tmp_path / "pair.npz"
    args = ["convert", str(tmp_path / "mag.nii"), str(tmp_path / "phase.nii")]
    args += ["--frequency", "50", "--mask-from-magnitude", "--out", str(out)]
    assert main(args) == 0
    np.testing.assert_array_equal(load(out).mask, truth)


def test_no_or_flat_magnitude_is_a_clear_error(tmp_path, rng):
    path = tmp_path / "wave.mat"
    scipy.io.savemat(path, {"U": rng.normal(size=(6, 5, 3)) + 1j})
    with pytest.raises(DatasetError, match="needs magnitude images"):
        convert(path, axes="xyc", frequency=[50.0], spacing=[1e-3], mask_from="magnitude")
    with pytest.raises(DatasetError, match="constant"):
        masks.from_magnitude(np.ones(GRID), "xyz")
    with pytest.raises(DatasetError, match="must be 'magnitude'"):
        masks.for_convert("otsu", np.ones(GRID), None, "xyz", path)
