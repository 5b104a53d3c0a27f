"""Wave-field datasets: the canonical ``.npz`` format of ``shared/data-format.md``.

A dataset holds the first-harmonic displacement ``u`` (complex, ``(F, C, *grid)``),
the drive ``frequency`` (Hz, ``(F,)``), the voxel ``spacing`` (m, ``(ndim,)``), an
optional ``mask``, optional ground truth ``mu`` (complex Pa), ``regions`` and ``rho``
(kg/m^3).
"""

from __future__ import annotations

import dataclasses

import numpy as np


class DatasetError(ValueError):
    """A dataset file or array does not follow the documented format."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One MRE acquisition (validated on construction).

    Attributes:
      u: complex displacement, shape ``(F, C, *grid)``, any length unit.
      frequency: drive frequency of each field, Hz, shape ``(F,)``.
      spacing: voxel size, m, shape ``(ndim,)``.
      mask: voxels to fit, bool, shape ``grid``.
      mu: ground-truth complex shear modulus, Pa, shape ``grid`` or ``(F, *grid)``, or None.
      regions: integer labels (1 = background, 2.. = targets), shape ``grid``, or None.
      rho: density, kg/m^3.
    """

    u: np.ndarray
    frequency: np.ndarray
    spacing: np.ndarray
    mask: np.ndarray
    mu: np.ndarray | None = None
    regions: np.ndarray | None = None
    rho: float = 1000.0

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(self.u.shape[2:])

    @property
    def ndim(self) -> int:
        return self.u.ndim - 2

    @property
    def n_freq(self) -> int:
        return self.u.shape[0]

    @property
    def n_comp(self) -> int:
        return self.u.shape[1]
