"""A tissue mask from a magnitude image: ``convert(..., mask="magnitude")``.

MRE magnitude images are bright in tissue and dark in air or background, so the mask is
the mean magnitude over time steps, components and frequencies, thresholded by Otsu's
method (scikit-image's ``threshold_otsu``: the level that best separates the two
intensity classes), with holes filled (``scipy.ndimage.binary_fill_holes``, in 3-D and
in every z-slice, so a vessel running through the slab is filled too) and only the
largest connected region kept (``scipy.ndimage.label``, faces adjacent). Dark spots
inside the tissue (vessels, low-signal voxels) are then inside the mask; separate bright
structures outside the largest region are not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import ndimage

from helmholtz_pinn.errors import DatasetError


def grid_image(magnitude: np.ndarray, axes: str) -> np.ndarray:
    """Mean of |magnitude| over its non-grid axes (t, c, f; '-'), grid axes in x, y, z
    order. ``axes`` names the array's axes as in :func:`helmholtz_pinn.io.convert.convert`."""
    magnitude = np.abs(np.asarray(magnitude, dtype=np.float64))
    if len(axes) != magnitude.ndim:
        raise DatasetError(
            f"magnitude of shape {magnitude.shape} does not fit axes {axes!r} of the wave field"
        )
    other = tuple(i for i, a in enumerate(axes) if a not in "xyz")
    image = magnitude.mean(axis=other)
    grid = [a for a in axes if a in "xyz"]
    return np.transpose(image, [grid.index(a) for a in "xyz" if a in grid])


def from_magnitude(magnitude: np.ndarray, axes: str) -> np.ndarray:
    """Boolean grid mask of the tissue in a magnitude image (module doc): Otsu threshold
    of :func:`grid_image`, holes filled, the largest connected region."""
    from skimage.filters import threshold_otsu

    image = grid_image(magnitude, axes)
    if not np.all(np.isfinite(image)) or np.ptp(image) == 0:
        raise DatasetError(
            "cannot make a mask from the magnitude image: it is constant or not finite; "
            "give a mask variable (MAT) or crop the data instead"
        )
    mask = ndimage.binary_fill_holes(image > threshold_otsu(image.ravel()))
    if mask.ndim == 3:  # a vessel through every slice is a hole of each slice, not in 3-D
        mask = np.stack([ndimage.binary_fill_holes(m) for m in np.moveaxis(mask, 2, 0)], 2)
    labels, count = ndimage.label(mask)
    if count > 1:
        sizes = ndimage.sum(mask, labels, index=np.arange(1, count + 1))
        mask = labels == 1 + int(np.argmax(sizes))
    return mask


def for_convert(
    mask_from: str, magnitude: np.ndarray | None, file_mask, axes: str, path: Path
) -> np.ndarray:
    """The mask of ``convert(..., mask_from=)``: "magnitude" only, from ``magnitude``
    (laid out by ``axes``); an error when the file has a mask of its own or no
    magnitude images."""
    if mask_from != "magnitude":
        raise DatasetError(f"mask_from must be 'magnitude' or None; got {mask_from!r}")
    if file_mask is not None:
        raise DatasetError(f"{path} has a mask variable: give mask_from=None to use it")
    if magnitude is None:
        raise DatasetError(
            "mask_from='magnitude' needs magnitude images: a nifti-polar pair (magnitude, "
            f"phase) or a 'magnitude' variable in the MATLAB file; {path} has none"
        )
    return from_magnitude(magnitude, axes)
