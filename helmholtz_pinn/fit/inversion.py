"""The library entry point: ``invert(data, config) -> Result``, for every kind of fit.

One dataset, an ensemble of seeds, a list of datasets of one grid, or the z-slices of a
volume (``slicewise=True``), on one device or many: the request taken
(:meth:`helmholtz_pinn.config.Config.requested`), the input admitted once, its results
checked against the host's memory first (:mod:`helmholtz_pinn.fit.admission`), the PDE
form looked up for the data (:func:`helmholtz_pinn.pinn.forms.resolve`), the request
planned against the data and the devices once, one frozen plan per law fitted
(:func:`helmholtz_pinn.fit.plan.plans`), and from there only the plans and the admitted
data go down: the members trained by their plan (:mod:`helmholtz_pinn.fit.training`,
:mod:`helmholtz_pinn.fit.chunks`, the one host loop
:func:`helmholtz_pinn.fit.host_loop.run`), a law chosen where ``mu_model="auto"``
(:mod:`helmholtz_pinn.fit.law_choice`) and the Results built
(:mod:`helmholtz_pinn.fit.results`).

Units at the edges (Pa, m, Hz), nondimensional inside: coordinates by the field of view
L (m), u by its RMS per frequency and component, mu by ``mu_ref`` (Pa).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

import jax

from helmholtz_pinn.assess import fit_checks
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import checkpoints, law_choice, placement
from helmholtz_pinn.fit.admission import admitted, check_results_fit
from helmholtz_pinn.fit.plan import plans
from helmholtz_pinn.fit.results import results
from helmholtz_pinn.fit.training import train
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import forms
from helmholtz_pinn.report.result import Result


def invert(
    data: Dataset | Sequence[Dataset],
    config: Config | None = None,
    *,
    slicewise: bool = False,
    devices: int | str | None = None,
    callback: Callable[[dict], bool | None] | None = None,
    progress: bool = True,
    checkpoint_dir: str | Path | None = None,
    resume: bool | str = False,
    force: bool = False,
    drop_empty_components: bool = False,
    **overrides,
) -> Result | list[Result]:
    """Fit the PINN and return the modulus in Pa.

    A list of datasets is fitted as one batched program: every member has its own
    scaling, loss, schedule, roll-back and early stop; mu_ref and the Fourier scales are
    shared (:func:`helmholtz_pinn.fit.plan.plan`). A batch of more members than
    ``max_members_per_chunk`` (or than the memory holds) is fitted chunk by chunk
    (:mod:`helmholtz_pinn.fit.chunks`), each chunk checkpointed on its own. ``ensemble``
    E > 1 gives each dataset E seeds (``mu`` their mean, ``mu_std`` their spread, over
    the members whose final loss is within ``ensemble_keep`` times the lowest:
    :func:`helmholtz_pinn.fit.results.kept_members`). Every dataset is first checked
    against MRE physics (:func:`helmholtz_pinn.assess.input_checks.check`: frequency in
    Hz, spacing in m, a resolved shear wave, no empty component). Ctrl-C (SIGINT)
    finishes the running block, writes a final checkpoint and raises
    :class:`~helmholtz_pinn.errors.Interrupted`.

    Args:
      data: one :class:`Dataset`, or a list of datasets of one grid, F and C.
      config: the settings; None: ``Config()``.
      slicewise: fit every z-slice of a 3-D dataset with its own 2-D PINN (one Result
        on the volume's grid; slices with an empty mask hold NaN). The default, one 3-D
        fit of a volume, uses the through-plane derivatives (docs/accuracy.md).
      devices: an int N or None/"all" (see :func:`helmholtz_pinn.fit.placement.plan`).
      callback: ``callback(record)`` once per block; return True to stop.
      progress: show a progress bar.
      checkpoint_dir: checkpoint the fit here every ``checkpoint_every`` blocks.
      resume: continue from the newest checkpoint in ``checkpoint_dir``
        (``resumed_from_step`` and a note in the run facts); with none there, note so
        and start at step 0, unless ``resume="strict"``, which raises
        :class:`~helmholtz_pinn.errors.CheckpointError` (as do other settings or other
        data than the checkpoint's).
      force: fit input that fails the physics checks anyway, recording the problems as
        notes.
      drop_empty_components: drop the components that are zero or negligible at every
        frequency (recorded as ``dropped_components`` in the run facts).
      **overrides: fields of ``config`` to replace, e.g. ``steps=2000``.

    Returns:
      One :class:`Result` for one dataset (or a slicewise volume), else a list of them
      in the order of ``data``.

    Raises:
      InputError: unusable input (:class:`~helmholtz_pinn.errors.ConfigError` for bad
        settings, :class:`~helmholtz_pinn.errors.DeviceMemoryError` when the problem
        does not fit).
      DivergenceError: the fit diverged and the roll-backs did not recover it.
    """
    cfg = Config.requested(config, overrides)
    check_results_fit(data, cfg, slicewise)  # the maps must fit the host: before any fit
    resume = checkpoints.resume_mode(resume)
    drop = drop_empty_components
    given = admitted(
        data, slicewise=slicewise, force=force, drop=drop, metric_margin=cfg.metric_margin
    )
    if jax.default_backend() != "cpu":  # a CPU's cores are training
        checks_ahead(given.datasets)
    form = forms.get(forms.resolve(cfg.pde, given.datasets[0].n_comp))
    where = dict(devices=devices, backend=jax.default_backend(), stacked=given.stacked)
    ckpt = dict(checkpoint_dir=checkpoint_dir, resume=resume)
    fits = plans(given.datasets, cfg, form=form, estimates=given.estimates, **where, **ckpt)
    run = dict(callback=callback, progress=progress)
    if cfg.mu_model == "auto":
        return law_choice.auto_law(given, fits, run)
    return results(train(given, fits[0], **run))


def checks_ahead(datasets: Sequence[Dataset]) -> Future:
    """Compute in a daemon thread, while the fit trains, the part of the fit checks that
    does not depend on the fit: the classical map's re-simulated wave
    (:func:`helmholtz_pinn.assess.fit_checks.baseline_resimulation`, kept per dataset; the
    checks then read it instead of computing it; docs/performance.md). An error stays in
    the Future, for the checks to meet again."""

    def work():
        return [fit_checks.baseline_resimulation(d) for d in datasets]

    return placement.in_background(work, "helmholtz-pinn-checks")
