"""The door of a fit: the input checked against MRE physics before any training.

:func:`admitted` is the door of :func:`helmholtz_pinn.fit.inversion.invert`: the input
scaled to unit amplitude, each dataset admitted (:func:`admit`), a batch held to one
grid, F and C (:func:`check_batch`), a volume cut into its z-slices for a slicewise fit.
:func:`admit` runs :func:`helmholtz_pinn.assess.input_checks.check` (frequency in Hz,
spacing in m, a resolved shear wave, no empty component) and records the facts a run
keeps (the AHI estimate, Pa; dropped components; the problems found under ``force``).
"""

from __future__ import annotations

import dataclasses
import time

from helmholtz_pinn.assess import input_checks, metrics
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset, unit_amplitude, z_slices


@dataclasses.dataclass
class Admitted:
    """The input of a run, admitted (:func:`admitted`): ``data`` (u divided by
    ``scales``), ``datasets`` the members (the z-slices of a slicewise fit, ``keep``
    their indices), ``checks`` the input facts per dataset, ``slicewise`` how they are
    fitted and ``seconds`` the time the door took (s)."""

    data: Dataset | list[Dataset]
    datasets: list[Dataset]
    keep: list[int] | None
    scales: list[float]
    checks: list[dict]
    slicewise: bool
    seconds: float

    @property
    def stacked(self) -> bool:
        """Whether the members have a leading axis (a batch, a slicewise fit)."""
        return len(self.datasets) > 1 or self.slicewise

    @property
    def estimates(self) -> list[float | None] | None:
        """The datasets' AHI estimates (Pa); None for the slices of a volume."""
        return None if self.slicewise else [c["ahi_estimate_pa"] for c in self.checks]


def admitted(data, *, slicewise: bool, force: bool, drop: bool, metric_margin: int) -> Admitted:
    """``data`` (one Dataset or a list of them) scaled to unit amplitude
    (:func:`helmholtz_pinn.io.dataset.unit_amplitude`: u / s, scale-free numerics),
    admitted (:func:`admit`; ``force``, ``drop``) and, for a ``slicewise`` fit, cut into
    its z-slices. A ``metric_margin`` (voxels) that leaves no voxel of a mask is refused
    here, before any fit (in-plane only for a slicewise fit)."""
    t0 = time.perf_counter()
    one = isinstance(data, Dataset)
    if slicewise and not one:
        raise InputError("slicewise=True takes one 3-D Dataset, not a list")
    scaled = [unit_amplitude(d) for d in ([data] if one else check_batch(data))]
    scales = [s for _, s in scaled]  # u / s: scale-free numerics; u_fit * s at the end
    admitted = [admit(d, force, drop, None if one else i) for i, (d, _) in enumerate(scaled)]
    checks = [facts for _, facts in admitted]
    data = admitted[0][0] if one else check_batch([d for d, _ in admitted])
    for d in [data] if one else data:  # a metric margin that leaves nothing: refused now
        metrics.interior_mask(d.mask, metric_margin, (0, 1) if slicewise else None)
    datasets, keep = z_slices(data) if slicewise else ([data] if one else data, None)
    seconds = time.perf_counter() - t0
    return Admitted(data, datasets, keep, scales, checks, slicewise, seconds)


def admit(dataset: Dataset, force: bool, drop: bool, index: int | None) -> tuple[Dataset, dict]:
    """The plausibility check at the door: (dataset, its run facts) with the empty
    components dropped when ``drop``; raises InputError unless ``force``, naming
    ``datasets[index]`` in a batch."""
    try:
        return _checked(dataset, force, drop)
    except InputError as err:
        if index is None:
            raise
        raise type(err)(f"datasets[{index}]: {err}") from None


def _checked(dataset: Dataset, force: bool, drop: bool) -> tuple[Dataset, dict]:
    facts = {}
    if drop:
        dataset, dropped = input_checks.drop_empty_components(dataset)
        facts["dropped_components"] = dropped
    facts["ahi_estimate_pa"] = input_checks.estimate(dataset)  # once: check, mu_ref, quality
    notes = input_checks.check(dataset, force=force, modulus=facts["ahi_estimate_pa"])
    if notes:
        facts["input_notes"] = notes
    return dataset, facts


def check_batch(datasets) -> list[Dataset]:
    datasets = list(datasets)
    if not datasets:
        raise InputError("invert needs a Dataset or a non-empty list of Dataset; got an empty list")
    first = datasets[0]
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise InputError(f"datasets[{i}] must be a Dataset; got {type(d).__name__}")
        if (d.grid, d.n_freq, d.n_comp) != (first.grid, first.n_freq, first.n_comp):
            raise InputError(
                "a batch of datasets must share one grid, F and C (one compiled program); "
                f"datasets[0] has grid {first.grid}, F={first.n_freq}, C={first.n_comp} but "
                f"datasets[{i}] has grid {d.grid}, F={d.n_freq}, C={d.n_comp}; invert them "
                "in separate calls"
            )
    return datasets
