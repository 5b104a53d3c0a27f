"""The result of an inversion (PINN or baseline): maps in Pa, history, metrics; saving.

:func:`make_result` is the one place a :class:`Result` is built: from the modulus maps
of one or more members (ensemble seeds), whose mean is the answer and whose spread is
``mu_std``. Every Result's facts carry ``fit_quality``, the plausibility checks of
:func:`helmholtz_pinn.assess.fit_checks.fit_quality`; each failed check is also a
:class:`~helmholtz_pinn.assess.fit_checks.FitQualityWarning`.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from pathlib import Path
from typing import Any

import numpy as np

from helmholtz_pinn.io.dataset import Dataset, unit_amplitude
from helmholtz_pinn.report.records import Metrics, WaveMisfit

# baseline methods: (function of helmholtz_pinn.assess.baselines, default smoothing); the default
# sigma is the function's own (baselines.AHI_SIGMA, baselines.CURL_SIGMA: measured)
BASELINES = {"ahi": ("ahi", "none"), "curl-mdev": ("curl_mdev", "gaussian")}


@dataclasses.dataclass
class Result:
    """A finished inversion.

    Attributes:
      mu: complex shear modulus, Pa, shape ``(F, *grid)`` (one map per frequency; a
        baseline gives one map of shape ``grid``).
      u_fit: the network's displacement field, data units, shape ``(F, C, *grid)``.
      mask: the voxels that were fitted.
      frequency: Hz.
      history: one record per block (step, time_s, lr, losses).
      metrics: run facts, fit checks and, with ground truth, accuracy
        (:class:`helmholtz_pinn.report.records.Metrics`; saved as metrics.json).
      config: the settings used (a :class:`~helmholtz_pinn.config.Config` for the PINN, a
        dict for a baseline). params/consts: trained network parameters.
      mu_std: ensemble standard deviation of Re and Im of mu, Pa (None for one fit).
      others: the maps of the laws fitted beside the kept one and not kept, complex Pa,
        ``(F, *grid)``, by law (``mu_model="auto"`` with both laws fitted on one dataset;
        saved in mu.npz as ``mu_<law>``); None otherwise.
    """

    mu: np.ndarray
    u_fit: np.ndarray
    mask: np.ndarray
    frequency: np.ndarray
    history: list[dict]
    metrics: Metrics
    config: Any
    params: Any = None
    consts: Any = None
    dataset: Dataset | None = None
    mu_std: np.ndarray | None = None
    others: dict[str, np.ndarray] | None = None

    @property
    def storage_modulus(self) -> np.ndarray:
        """G' = Re(mu), Pa, on the grid (first frequency)."""
        return (self.mu if self.mu.ndim == self.mask.ndim else self.mu[0]).real

    def save(
        self, out: str | Path, *, nifti: bool = False, affine: np.ndarray | None = None
    ) -> Path:
        """Write mu.npz (Pa; a fit of a law with parameters adds their maps, e.g. its
        ``alpha`` or its ``viscosity`` in Pa s: :mod:`helmholtz_pinn.laws`; the maps of
        laws fitted and not kept as ``mu_<law>``), metrics.json,
        history.csv, config.json (and the NIfTI maps), in place of an earlier run's result
        files in ``out`` (other files are left alone), then the figures. The files are
        written beside and moved in when all are written
        (:func:`helmholtz_pinn.report.files.staged`): a failed write leaves the earlier
        result whole. The figures come after, once the maps and facts are in place
        (:func:`helmholtz_pinn.report.files.added`): a failure there leaves them whole.

        Args:
          out: the output folder (created).
          nifti: also write the clinical maps of :mod:`helmholtz_pinn.assess.clinical`
            (G', G'', |G*|, phi, c, a, a/omega) as
            ``OUT/maps/<quantity>_<unit>_<f>Hz.nii.gz`` and the mask as
            ``OUT/maps/mask.nii.gz``, with the dataset's voxel size in mm.
          affine: the NIfTI maps' orientation and origin (4x4, mm); None: the dataset's
            (``Dataset.affine``: set by :func:`helmholtz_pinn.io.convert.convert` from a
            NIfTI input), else a diagonal one
            (:func:`helmholtz_pinn.report.files.nifti_affine`).

        Returns:
          ``out``.

        Raises:
          InputError: ``nifti=True`` on a Result without its dataset.
          OutputError: ``out`` cannot be created or written (the figures: the maps and
            facts are written).
        """
        from helmholtz_pinn.errors import InputError
        from helmholtz_pinn.report import files

        if nifti and self.dataset is None:
            raise InputError("nifti=True needs the Result's dataset (its spacing and rho)")

        out = files.prepare_dir(out)
        with files.writing(out):
            with files.staged(out) as stage:
                misfit = self._write(stage, nifti, affine)
            if self.dataset is not None:
                from helmholtz_pinn.report import figures

                with files.added(out) as stage:
                    figures.save_all(self, self.dataset, stage, misfit=misfit)
        return out

    def _write(self, out: Path, nifti: bool, affine) -> np.ndarray | None:
        """Write the maps and facts into ``out``; returns the wave misfit map (for the
        figures) where the facts have one."""
        from helmholtz_pinn import laws
        from helmholtz_pinn.assess import clinical
        from helmholtz_pinn.report import files

        extra = {} if self.mu_std is None else {"mu_std": self.mu_std}
        extra.update({f"mu_{law}": m for law, m in (self.others or {}).items()})
        if "wave_misfit" in self.metrics and self.dataset is not None:
            from helmholtz_pinn.assess.metrics import wave_misfit

            extra["misfit"] = wave_misfit(self.u_fit, self.dataset.u, self.dataset.mask)
        arrays = dict(mu=self.mu, mask=self.mask, frequency=self.frequency, unit="Pa")
        model = getattr(self.config, "mu_model", None)
        for name, values in clinical.model_parameters(self.mu, self.frequency, model).items():
            arrays[name] = values  # the law's own map (helmholtz_pinn.laws), with its unit
            arrays[f"{name}_unit"] = laws.get(model).maps[name].unit
        files.write_npz(out / "mu.npz", **arrays, **extra)
        files.write_json(out / "metrics.json", self.metrics)
        files.write_history(out / "history.csv", self.history)
        settings = self.config
        if dataclasses.is_dataclass(settings):
            settings = dataclasses.asdict(settings)
        files.write_json(out / "config.json", settings)
        if nifti:
            data = self.dataset
            maps = clinical.nifti_maps(self.mu, self.frequency, data.rho, data.ndim, model)
            maps["mask"] = (self.mask, "mask: fitted voxels are 1")
            affine = data.affine if affine is None else affine
            files.write_nifti_maps(out, maps, data.spacing, affine=affine)
        return extra.get("misfit")

    def summary(self, *, wall_time_s: float | None = None) -> str:
        """The map in a few lines: median G', G'' and phase angle per frequency, each
        region's (with its size, error and contrast where known), how the fit ran and one
        verdict of the fit checks (:func:`helmholtz_pinn.report.summary.summary`);
        ``wall_time_s``: the whole command's time, s, shown instead of the fit's."""
        from helmholtz_pinn.report.summary import summary

        return summary(self, wall_time_s=wall_time_s)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.mu.shape))
        return f"Result(mu {shape} complex Pa)\n{self.summary()}"

    def plot(self):
        """The modulus figure (recovered, truth and error when known).

        Returns:
          A matplotlib ``Figure``.
        """
        from helmholtz_pinn.report import figures

        return figures.modulus_figure(self.mu, self.dataset)


def member_stats(mus: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The mean of member maps ``mus`` (E, ...) and their spread (the Re and Im standard
    deviations; None for E = 1), over the finite members of each voxel: a member left
    out of a slice (NaN there) does not count; NaN where no member is finite."""
    if len(mus) == 1:
        return mus[0], None
    finite = np.isfinite(mus)
    count = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, mus, 0).sum(axis=0) / count
        dev = np.where(finite, mus - mean, 0)
        std = np.sqrt((dev.real**2).sum(axis=0) / count) + 1j * np.sqrt(
            (dev.imag**2).sum(axis=0) / count
        )
    return mean, std


def misfit_summary(u_fit: np.ndarray, dataset: Dataset, scored: np.ndarray) -> WaveMisfit:
    """The ``wave_misfit`` entry of metrics.json, per frequency: median and 95th
    percentile over the scored voxels of :func:`helmholtz_pinn.assess.metrics.wave_misfit`, and
    ``noise``, what unfitted noise alone would give: sqrt(sum_c n_c^2 / sum_c s_c^2) with
    n_c and s_c the noise and field RMS of component c (:func:`stencils.field_noise`,
    :func:`stencils.field_rms`)."""
    from helmholtz_pinn.assess import metrics, stencils

    m = metrics.wave_misfit(u_fit, dataset.u, dataset.mask)[:, scored]
    noise2 = np.sum(stencils.field_noise(dataset) ** 2, axis=1)
    power = np.sum(stencils.field_rms(dataset) ** 2, axis=1)
    out = {"median": [], "p95": [], "noise": []}
    for row, n2, p in zip(m, noise2, power, strict=True):
        row = row[np.isfinite(row)]
        out["median"].append(round(float(np.median(row)), 5) if row.size else None)
        out["p95"].append(round(float(np.percentile(row, 95)), 5) if row.size else None)
        out["noise"].append(round(float(np.sqrt(n2 / p)), 5) if p > 0 else None)
    return {**out, "unit": "fraction of the field's RMS amplitude"}


def make_result(
    dataset: Dataset,
    config: Any,
    mus: np.ndarray,
    u_fit: np.ndarray,
    facts: Metrics,
    history: list[dict] | None = None,
    state=None,
    *,
    margin: int | None = None,
) -> Result:
    """A Result from member maps ``mus`` (E, F, *grid) or (E, *grid) in Pa (E >= 1) and
    the fitted field ``u_fit``: mu is their mean, mu_std their spread (E > 1); accuracy
    metrics against the dataset's ground truth, the ``clinical`` medians
    (:func:`helmholtz_pinn.assess.clinical.summaries`: over the mask and per region) and the
    ``fit_quality`` checks (:func:`quality_checks`) are added to ``facts``; a failed
    check is warned about.

    ``margin`` (default: the config's ``metric_margin``, else 0) leaves a rim of that many
    voxels inside the mask out of the accuracy metrics and the clinical medians
    (:func:`helmholtz_pinn.assess.metrics.interior_mask`; in-plane only for a slicewise fit,
    whose slices have no z edge); ``metric_margin`` and ``metric_voxels`` (the voxels
    scored) are recorded in the facts. The fit-quality checks use the whole mask."""
    from helmholtz_pinn.assess import clinical, fit_checks, metrics
    from helmholtz_pinn.config import Config
    from helmholtz_pinn.errors import warn

    mu, mu_std = member_stats(np.asarray(mus))
    margin = getattr(config, "metric_margin", 0) if margin is None else margin
    axes = (0, 1) if facts.get("mode") == "slicewise" else None
    scored = metrics.interior_mask(dataset.mask, margin, axes)
    facts = {**facts, "unit_mu": "Pa", **metrics.evaluate(mu, dataset, margin=margin, axes=axes)}
    facts.update(metric_margin=int(margin), metric_voxels=int(scored.sum()))
    facts["clinical"] = clinical.summaries(
        mu,
        dataset.frequency,
        dataset.rho,
        scored,
        dataset.regions,
        getattr(config, "mu_model", None),
    )
    if isinstance(config, Config):  # a PINN's fitted field (a baseline's u_fit is the data)
        facts["wave_misfit"] = misfit_summary(u_fit, dataset, scored)
    if dataset.regions is not None and (unlabelled := int((dataset.regions[scored] < 1).sum())):
        note = (
            f"{unlabelled} scored voxel(s) carry region label 0 (unlabelled): they count in "
            "the whole-mask metrics, not in the per-region medians and contrasts"
        )
        facts["notes"] = [*facts.get("notes", []), note]
    facts["fit_quality"] = quality_checks(dataset, config, mu, facts, history, mu_std)
    for check in facts["fit_quality"]:
        if not check["passed"]:
            message = f"fit quality: {check['name']}: {check['message']}"
            warn(message, fit_checks.FitQualityWarning)
    return Result(
        mu=mu,
        u_fit=u_fit,
        mask=dataset.mask,
        frequency=dataset.frequency,
        history=history or [],
        metrics=facts,
        config=config,
        params=None if state is None else state.params,
        consts=None if state is None else state.consts,
        dataset=dataset,
        mu_std=mu_std,
    )


def baseline_result(
    dataset: Dataset,
    method: str = "ahi",
    *,
    smoothing: str | None = None,
    sigma: float | None = None,
    window: int = 7,
    margin: int = 0,
    sigma_mm: float | None = None,
) -> Result:
    """A classical baseline of :mod:`helmholtz_pinn.assess.baselines` as a Result (mu in Pa).

    ``method``: "ahi" (MDEV inversion of u, any number of components) or "curl-mdev"
    (of curl u: needs the 3 components along x, y, z). ``smoothing`` and ``sigma``
    (voxels) default to the method's: none and 2 for ahi, gaussian and 1.5 for curl-mdev
    (measured: ``baselines.AHI_SIGMA``, ``baselines.CURL_SIGMA``); ``sigma_mm`` gives the
    width in mm instead (cubic voxels; not with ``sigma``); a width implies Gaussian
    smoothing; ``window`` (voxels) is the Savitzky-Golay window; ``margin`` (voxels)
    leaves the mask's rim out of the metrics (see :func:`make_result`). The facts hold
    ``method``, ``baseline_settings`` (:func:`~helmholtz_pinn.assess.baselines.baseline_settings`:
    method, smoothing, sigma in voxels and mm, window; also the Result's ``config``, saved
    as config.json),
    ``wall_time_s`` and ``fit_quality`` (see :func:`quality_checks`).

    Raises :class:`~helmholtz_pinn.errors.DatasetError` for curl-mdev on data without 3
    components and :class:`~helmholtz_pinn.errors.InputError` for unusable settings.
    """
    from helmholtz_pinn.assess import baselines
    from helmholtz_pinn.errors import DatasetError, InputError

    if method not in BASELINES:
        raise InputError(f"method must be one of {tuple(BASELINES)}; got {method!r}")
    name, default_smoothing = BASELINES[method]
    fn, width = getattr(baselines, name), sigma is not None or sigma_mm is not None
    smoothing = smoothing or ("gaussian" if width else default_smoothing)
    if sigma is not None and sigma_mm is not None:
        raise InputError(f"give sigma (voxels) or sigma_mm, not both; got {sigma} and {sigma_mm}")
    if width and smoothing != "gaussian":
        raise InputError(f"a Gaussian width needs smoothing 'gaussian'; got {smoothing!r}")
    if sigma_mm is not None:
        sigma = baselines.sigma_in_voxels(sigma_mm, dataset.spacing)
    elif sigma is None:
        sigma = inspect.signature(fn).parameters["sigma"].default
    if name == "curl_mdev" and dataset.n_comp != 3:
        raise DatasetError(
            "curl-mdev needs the 3 displacement components (x, y, z along the grid axes); "
            f"the data has C = {dataset.n_comp}: use method ahi"
        )
    t0 = time.perf_counter()
    scaled, _ = unit_amplitude(dataset)  # the modulus does not depend on u's scale
    try:
        settings = baselines.baseline_settings(name, smoothing, sigma, window, dataset.spacing)
        mu = fn(scaled, smoothing=smoothing, sigma=sigma, window=window)
    except ValueError as err:  # InputError (and any ValueError): name the method, one line
        raise InputError(f"baseline {method}: {err}") from None
    facts = dict(method=method, baseline_settings=settings, wall_time_s=time.perf_counter() - t0)
    result = make_result(scaled, settings, mu[None], scaled.u, facts, margin=margin)
    result.dataset, result.u_fit = dataset, dataset.u
    return result


def quality_checks(
    dataset: Dataset,
    config: Any,
    mu: np.ndarray,
    facts: dict,
    history: list[dict] | None,
    mu_std: np.ndarray | None = None,
) -> list[dict]:
    """The ``fit_quality`` entry of a Result's facts (:func:`fit_checks.fit_quality`).

    A PINN fit (``config`` a :class:`~helmholtz_pinn.config.Config`) runs every check:
    against ``mu_ref_pa``, the final losses, ``noise_fraction`` and ``field_weight`` (when
    the run facts have them), the history, an ensemble's ``mu_std`` and the data's own
    facts (:func:`fit_checks.data_facts`: voxel size, frequencies, the wavelength of u, the
    through-plane share of a 2-D slice) and the map's re-simulation against a classical
    map's (:func:`fit_checks.resimulation_facts`), and whether the plan ran the small fit
    (the plan record's ``small_fit``). The AHI estimate
    is the facts' ``ahi_estimate_pa`` (the dataset's, from :func:`inversion.invert`), else
    :func:`baselines.estimate_modulus` of the dataset. A baseline
    (``config`` a dict of settings) has no losses or reference of its own: it runs only
    ``modulus_range``, against the AHI estimate of the data as the reference.
    """
    from helmholtz_pinn.assess import baselines, fit_checks
    from helmholtz_pinn.config import Config
    from helmholtz_pinn.pinn import forms

    pinn = isinstance(config, Config)
    estimate = facts.get("ahi_estimate_pa")  # computed once at the door by invert
    if estimate is None:
        try:
            estimate = baselines.estimate_modulus(dataset)
        except ValueError:  # no finite AHI modulus in the mask: the check says skipped
            estimate = None
    if not pinn:
        return fit_checks.fit_quality(mu, dataset.mask, estimate, checks=("modulus_range",))
    return fit_checks.fit_quality(
        mu,
        dataset.mask,
        facts.get("mu_ref_pa"),
        ahi_estimate=estimate,
        final_data=facts.get("final_data"),
        final_pde=facts.get("final_pde"),
        noise_fraction=facts.get("noise_fraction"),
        field_weight=facts.get("field_weight"),
        history=history,
        mu_std=mu_std,
        members=config.ensemble,
        law_spread=facts.get("law_spread"),
        **({"spread_max": forms.get(facts["pde"]).spread_max} if facts.get("pde") else {}),
        laws_tried=tuple(facts.get("laws_tried", ())),
        mu_model=config.mu_model,
        resimulation=fit_checks.resimulation_facts(dataset, mu),
        small_fit=bool((facts.get("plan") or {}).get("small_fit")),
        **fit_checks.data_facts(dataset),
    )
