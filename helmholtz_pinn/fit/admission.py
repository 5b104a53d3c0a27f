"""The door of a fit: each dataset checked against MRE physics before any training.

:func:`admit` runs :func:`helmholtz_pinn.assess.input_checks.check` (frequency in Hz,
spacing in m, a resolved shear wave, no empty component) and records the facts a run
keeps (the AHI estimate, Pa; dropped components; the problems found under ``force``);
:func:`check_batch` holds a list of datasets to one grid, F and C.
"""

from __future__ import annotations

from helmholtz_pinn.assess import input_checks
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.io.dataset import Dataset


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
