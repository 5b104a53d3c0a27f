"""The typed records of a result: what ``Result.metrics`` holds and ``metrics.json``
serialises. They are ``TypedDict``s: plain dicts at run time (JSON as they are), with
every key and its type declared here, so an editor, a type checker and the tests know the
layout (``tests/report/test_records.py`` holds real fits to it).

Units: moduli in Pa, times in s, lengths in m, errors and fractions as fractions (not %).
"""

from __future__ import annotations

from typing import Any, TypedDict

from helmholtz_pinn.assess.fit_checks import FitCheck

__all__ = ["Accuracy", "BaselineFacts", "FitCheck", "Metrics", "RunFacts", "WaveMisfit"]


class WaveMisfit(TypedDict):
    """Per frequency: median and 95th percentile of the fitted field's local misfit over
    the scored voxels, beside the misfit that unfitted noise alone would give."""

    median: list[float | None]
    p95: list[float | None]
    noise: list[float | None]
    unit: str


class RunFacts(TypedDict, total=False):
    """How a PINN fit ran: settings it resolved, where it ran, how it ended."""

    steps: int
    wall_time_s: float
    device: str
    devices: int
    parallel: str
    ensemble: int
    pde: str
    mu_ref_pa: float
    length_m: float
    sigma_u: float
    sigma_mu: float
    sigma_factor_u: float
    batch_size: int
    pde_margin: int
    pde_fraction: float
    final_loss: float | list[float] | None
    final_data: float | list[float] | None
    final_pde: float | list[float] | None
    retries: int | list[int]
    weighting: str
    noise_fraction: list[list[float | None]]
    field_weight: list[list[float]]
    assumption: str | None
    notes: list[str]
    input_notes: list[str]
    ahi_estimate_pa: float | None
    dropped_components: list[int]
    mode: str
    slices_fitted: list[int]
    slices_skipped: list[int]
    batch_members: int
    batch_index: int
    ensemble_dropped_seeds: list[int] | dict[str, list[int]]
    law_scale: list[dict[str, float]]  # per frequency: frequency_hz, abs, phase_deg
    law_spread: float
    law: dict[str, Any]  # mu_model="auto": the law kept, the spread of each law tried
    laws_tried: list[str]  # mu_model="auto": the laws fitted before one was kept
    resumed_from_step: int | None
    resumed_from: str | None
    no_checkpoint_in: str
    cleared_checkpoints: str
    unreadable_checkpoints: list[str]
    chunks: int
    datasets_per_chunk: int
    chunks_already_done: int
    # the L-BFGS phase: steps, points, losses, kept, compile_wait_s, time_s; continued (auto)
    lbfgs: dict[str, Any]
    tf32_steps: int  # the Adam step up to which blocks ran in TF32 on a GPU (0: float32)
    plan: dict[str, Any]  # the run's plan: what was asked beside what runs (fit.plan.Plan.record)


class BaselineFacts(TypedDict, total=False):
    """How a classical baseline ran."""

    method: str
    baseline_settings: dict[str, Any]
    wall_time_s: float
    notes: list[str]


class Accuracy(TypedDict, total=False):
    """Against a known modulus (``helmholtz_pinn.assess.metrics.evaluate``)."""

    median_rel_error_storage: float | None
    mean_rel_error_storage: float | None
    median_rel_error_abs: float | None
    mean_rel_error_abs: float | None
    median_rel_error_loss: float | None
    pearson_r_storage: float | None
    regions: dict[str, dict[str, float | None]]
    contrast_transfer: dict[str, float | None]
    contrast_transfer_loss: dict[str, float | None]  # the same on G''
    per_frequency: list[dict[str, Any]]


class Metrics(RunFacts, BaselineFacts, Accuracy, total=False):
    """Everything of ``metrics.json``: the run facts (PINN or baseline), the accuracy
    where the truth is known, and what every result carries."""

    unit_mu: str
    metric_margin: int
    metric_voxels: int
    clinical: dict[str, Any]
    wave_misfit: WaveMisfit
    fit_quality: list[FitCheck]
