"""One law's fit: train the admitted members of a run by its plan.

:func:`train` is what :func:`helmholtz_pinn.fit.inversion.invert` runs once per law
fitted, with that law's :class:`~helmholtz_pinn.fit.plan.Plan`;
:mod:`helmholtz_pinn.fit.results` turns its :class:`Trained` members into Results.
"""

from __future__ import annotations

import dataclasses
import time

from helmholtz_pinn.fit import checkpoints, chunks
from helmholtz_pinn.fit.admission import Admitted
from helmholtz_pinn.fit.plan import Plan
from helmholtz_pinn.io.dataset import Dataset


@dataclasses.dataclass
class Trained:
    """One law's trained members before their Results (:func:`train`,
    :func:`helmholtz_pinn.fit.results.results`): ``data`` the admitted input (u divided
    by ``scales``), ``datasets`` the members' (z-slices of a slicewise fit, ``keep``
    their indices), ``checks`` the input facts per dataset, ``fitted`` the trained
    members, their maps and their :class:`~helmholtz_pinn.fit.plan.Plan`,
    ``slicewise`` how they were fitted and ``seconds`` the wall time of the fit so far
    (s)."""

    data: Dataset | list[Dataset]
    datasets: list[Dataset]
    keep: list[int] | None
    scales: list[float]
    checks: list[dict]
    fitted: chunks.Fitted
    slicewise: bool
    seconds: float

    @property
    def plan(self) -> Plan:
        return self.fitted.plan


def train(given: Admitted, plan: Plan, *, callback, progress) -> Trained:
    """Train the members of the admitted input ``given`` by ``plan`` (one law's fit),
    checkpointed in the plan's ``checkpoint_dir``."""
    t0 = time.perf_counter()
    data, folder = given.data, plan.checkpoint_dir
    one = [data] if isinstance(data, Dataset) else data
    prints = None if folder is None else checkpoints.fingerprint(one)
    ckpt = (folder, prints, plan.resume)
    fitted = chunks.fit_members(
        given.datasets, plan, callback=callback, progress=progress, ckpt=ckpt
    )
    seconds = given.seconds + time.perf_counter() - t0
    return Trained(
        data, given.datasets, given.keep, given.scales, given.checks, fitted, given.slicewise,
        seconds,
    )  # fmt: skip
