"""One law's fit: check and scale the input, plan the run, train its members.

:func:`train` is what :func:`helmholtz_pinn.fit.inversion.invert` runs once per law
fitted; :mod:`helmholtz_pinn.fit.results` turns its :class:`Trained` members into Results.
"""

from __future__ import annotations

import dataclasses
import time

import jax

from helmholtz_pinn.assess import metrics
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.fit import admission, checkpoints, chunks, plan
from helmholtz_pinn.io.dataset import Dataset, unit_amplitude, z_slices


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
    def plan(self) -> plan.Plan:
        return self.fitted.plan


def train(
    data, cfg: Config, *, law: str | None = None, slicewise, devices, callback, progress,
    checkpoint_dir, resume, force, drop_empty_components,
) -> Trained:  # fmt: skip
    """Check, scale, plan (:func:`helmholtz_pinn.fit.plan.plan`, for the law ``law``)
    and train one law's members."""
    resume = checkpoints.resume_mode(resume)
    t0 = time.perf_counter()
    one = isinstance(data, Dataset)
    if slicewise and not one:
        raise InputError("slicewise=True takes one 3-D Dataset, not a list")
    scaled = [unit_amplitude(d) for d in ([data] if one else admission.check_batch(data))]
    scales = [s for _, s in scaled]  # u / s: scale-free numerics; u_fit * s at the end
    admitted = [
        admission.admit(d, force, drop_empty_components, None if one else i)
        for i, (d, _) in enumerate(scaled)
    ]
    checks = [facts for _, facts in admitted]
    data = admitted[0][0] if one else admission.check_batch([d for d, _ in admitted])
    for d in [data] if one else data:  # a metric margin that leaves nothing: refused now
        metrics.interior_mask(d.mask, cfg.metric_margin, (0, 1) if slicewise else None)
    datasets, keep = z_slices(data) if slicewise else ([data] if one else data, None)
    stacked = len(datasets) > 1 or slicewise
    saved = plan.saved_chunk_size(checkpoint_dir) if resume and stacked else None
    run_plan = plan.plan(
        datasets,
        cfg,
        law=law,
        devices=devices,
        backend=jax.default_backend(),
        stacked=stacked,
        estimates=None if slicewise else [c["ahi_estimate_pa"] for c in checks],
        datasets_per_chunk=saved,
    )
    prints = None if checkpoint_dir is None else checkpoints.fingerprint([data] if one else data)
    ckpt = (checkpoint_dir, prints, resume)
    fitted = chunks.fit_members(datasets, run_plan, callback=callback, progress=progress, ckpt=ckpt)
    seconds = time.perf_counter() - t0
    return Trained(data, datasets, keep, scales, checks, fitted, slicewise, seconds)
