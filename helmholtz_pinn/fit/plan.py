"""A run's plan: the user's :class:`~helmholtz_pinn.config.Config` resolved against the
data and the devices, once, into a frozen :class:`Plan` with no undecided field.

``Config`` is what the user asked for (None: "decide for me"); :func:`plan` decides every
such field with one rule function per field below (the network sizes and the batch by
the data's dimension, the laws to fit, the Adam steps and the L-BFGS phase, mu_ref (Pa),
the Fourier scales (cycles per field of view), the PDE margin (voxels), the chunks and,
last, the placement on the devices with its TF32 steps). The fit, its checkpoints and
``metrics.json`` (the ``plan`` record, :attr:`Plan.record`) read the plan; nothing
downstream changes a setting. A default derived from the data belongs in its field's rule
function. Why each default is what it is: docs/defaults.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from helmholtz_pinn.assess import laws as law_choice
from helmholtz_pinn.assess import wavelength
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.fit import defaults, memory, placement
from helmholtz_pinn.fit.defaults import (
    BATCH_SIZE,
    CLEAN_NOISE,
    MU_DEPTH,
    MU_WIDTH,
    N_FEATURES,
    WIDTH,
)
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.pinn import forms, problem, train
from helmholtz_pinn.pinn.problem import Prepared

# The network sizes and the voxels per step when the Config leaves them None, by the
# data's dimension (WIDTH, N_FEATURES, MU_WIDTH, MU_DEPTH, BATCH_SIZE), the u-network's
# Fourier factors (defaults.base_factor_u and the noisy rule) and the noise of clean data
# (CLEAN_NOISE) are the tables of helmholtz_pinn.fit.defaults, applied here. The
# navier form's pressure sits on the u-network in 3-D. Why: docs/defaults.md.
AUX_NETWORK = {2: "mu", 3: "u"}
# The L-BFGS phase (Config.lbfgs_steps None): LBFGS_STEPS iterations after Adam for one
# fit of a form whose Form.lbfgs_default is set (navier: the form and the kind of run it
# was measured on: one dataset, no ensemble)
# longer than Config.lbfgs_from whose best field has a noise fraction below CLEAN_NOISE;
# at -20 dB (noise fraction 0.06-0.08) it fitted the noise; and whose mask has at most
# Config.lbfgs_points voxels, so the phase's sample is the whole field (on a larger
# volume it cost as much as the Adam phase for 0.1 point of G'). The fits of
# mu_model="auto" are judged after AUTO_LBFGS_STEPS (with the longer phase both laws'
# spreads shrank and the choice flipped to the wrong law on weakly damped Voigt tissue);
# the kept fit's phase then goes on to LBFGS_STEPS. Why: docs/defaults.md.
LBFGS_STEPS = 4000
AUTO_LBFGS_STEPS = 1000
# TF32 steps: the precision schedule is decided with the placement
# (:func:`helmholtz_pinn.fit.placement.tf32_steps`).


@dataclasses.dataclass(frozen=True)
class Plan:
    """One law's fit of a run, every setting decided (:func:`plan`).

    Attributes:
      config: what the user asked for (overrides applied), with the fields the data
        decide filled where it left them None (:func:`decide_schedule`: ``steps``,
        ``learning_rate``; the small fit's network sizes and batch too).
      laws: the laws the run fits: the one asked for; with ``mu_model="auto"`` both of
        :data:`helmholtz_pinn.assess.laws.ORDER` (judged, the kept one's Result), or
        per-frequency for one frequency (no law to choose).
      spec: the compiled program's key: the form, this fit's law (``spec.mu_model``),
        the network sizes and the batch (voxels per step).
      steps: the Adam steps that run, whole ``sync_interval`` blocks (the request cut
        at ``lbfgs_from`` before an L-BFGS phase, then rounded up).
      lbfgs_steps: the L-BFGS phase's iterations (0: none).
      lbfgs_continued_to: the iterations the kept fit's phase goes on to after a law
        choice (:data:`LBFGS_STEPS`); ``lbfgs_steps`` when not continued.
      lbfgs_skipped: why an L-BFGS phase asked for does not run (several devices), else
        None.
      tf32_steps: the Adam steps whose matmuls run in TF32 (0: none).
      float32_algorithm: the matmul algorithm of the float32 Adam blocks (those of a fit
        without TF32 steps, or after them), None for "highest"
        (:func:`helmholtz_pinn.fit.placement.float32_algorithm`).
      mu_ref: the reference modulus, Pa, shared by every member.
      sigma_u, sigma_mu: the networks' Fourier scales, cycles per field of view.
      sigma_factor_u: the u-network's factor of the automatic Fourier scale.
      sigma_factor_u_rule: the rule that set it, in words (:func:`u_factor`).
      sigma_ratio_z: 3-D fits: the slice axis's Fourier scale over the in-plane one,
        both networks; sigma_ratio_z_rule: the rule that set it (:func:`z_ratio`).
      pde_weight_rule: the rule that set the PDE weight (``config.pde_weight``), in
        words (:func:`pde_weight`).
      decided: the ``config`` fields the data decided (:func:`decide_schedule`, the PDE
        weight).
      fit_size_rule: the rule that decided them, in words.
      small_fit: the small fit's rule applied (noise at coarse sampling or a small noisy
        2-D field, :func:`helmholtz_pinn.fit.defaults.fit_size`), whichever fields it
        filled.
      pde_margin: per dataset (member), voxels along the field of view's in-plane
        edges without a PDE residual.
      stacked: the members have a leading axis (a batch, a slicewise fit).
      datasets_per_chunk: datasets trained at once (all of them unless chunked).
      rows: the voxel rows of every member's problem (the largest mask; padded).
      placement: where one chunk runs (:class:`helmholtz_pinn.fit.placement.Placement`).
      checkpoint_dir: this fit's checkpoint folder (a law's subfolder where auto fits
        several), or None.
      resume: how this fit resumes from ``checkpoint_dir``: False, True or "strict"
        (:func:`helmholtz_pinn.fit.checkpoints.resume_mode`).
    """

    config: Config
    laws: tuple[str, ...]
    spec: train.Spec
    steps: int
    lbfgs_steps: int
    lbfgs_continued_to: int
    lbfgs_skipped: str | None
    tf32_steps: int
    mu_ref: float
    sigma_u: float
    sigma_mu: float
    sigma_factor_u: float
    pde_margin: tuple[int, ...]
    stacked: bool
    datasets_per_chunk: int
    rows: int
    placement: placement.Placement
    checkpoint_dir: Path | None = None
    resume: bool | str = False
    sigma_factor_u_rule: str = ""
    decided: tuple[str, ...] = ()
    fit_size_rule: str = ""
    small_fit: bool = False
    sigma_ratio_z: float = defaults.SIGMA_RATIO_Z[0]
    sigma_ratio_z_rule: str = ""
    float32_algorithm: str | None = None
    pde_weight_rule: str = ""

    @property
    def mu_model(self) -> str:
        """This fit's law."""
        return self.spec.mu_model

    @property
    def ensemble(self) -> int:
        return self.config.ensemble

    @property
    def steps_cut(self) -> int:
        """The Adam steps asked for, cut at ``lbfgs_from`` before an L-BFGS phase (not
        yet rounded to whole blocks)."""
        cfg = self.config
        return min(cfg.steps, cfg.lbfgs_from) if self.lbfgs_steps else cfg.steps

    @property
    def runs_lbfgs(self) -> bool:
        """Whether the L-BFGS phase runs (asked for, on one device)."""
        return bool(self.lbfgs_steps) and self.lbfgs_skipped is None

    @property
    def switches_precision(self) -> bool:
        """Whether the Adam steps switch from TF32 to float32 within the fit (two block
        programs: :class:`helmholtz_pinn.fit.placement.Scheduled`)."""
        return 0 < self.tf32_steps < self.steps

    def problem_settings(self, index: int = 0) -> dict:
        """The keyword arguments of :func:`helmholtz_pinn.pinn.problem.prepare` for
        dataset ``index`` of the run."""
        cfg = self.config
        return dict(
            spec=self.spec,
            mu_ref=self.mu_ref,
            sigma_u=self.sigma_u,
            sigma_mu=self.sigma_mu,
            sigma_factor_u=self.sigma_factor_u,
            pde_margin=self.pde_margin[index],
            weighting=cfg.weighting,
            noise_floor=cfg.noise_floor,
        )

    def settings(self, lbfgs_ran: int | None = None) -> Config:
        """The settings that ran, as a Config (``Result.config``, ``config.json``, the
        checkpoints' settings): the request with this fit's law, the Adam steps
        (:attr:`steps_cut`: the host loop runs them in whole blocks), the L-BFGS
        iterations (``lbfgs_ran`` where a continued phase ran more), the TF32 steps and
        the slice axis's Fourier scale filled in."""
        lbfgs = self.lbfgs_steps if lbfgs_ran is None else lbfgs_ran
        steps, tf32 = self.steps_cut, self.tf32_steps
        ran = self.config.ran(
            mu_model=self.mu_model, steps=steps, lbfgs_steps=lbfgs, tf32_steps=tf32
        )
        return ran.replace(sigma_ratio_z=self.sigma_ratio_z)

    @property
    def record(self) -> dict:
        """The ``plan`` record of ``metrics.json``: what was asked where it was decided
        or cut, and what runs."""
        spec = self.spec
        return {
            "steps_asked": None if "steps" in self.decided else self.config.steps,
            "steps": self.steps,
            "lbfgs_steps_asked": self.config.lbfgs_steps,
            "lbfgs_steps": self.lbfgs_steps,
            "lbfgs_continued_to": self.lbfgs_continued_to,
            "lbfgs_skipped": self.lbfgs_skipped,
            "tf32_steps_asked": self.config.tf32_steps,
            "tf32_steps": self.tf32_steps,
            "float32_algorithm": self.float32_algorithm or "highest",
            "laws": list(self.laws),
            "mu_model": self.mu_model,
            "pde": spec.pde,
            "networks": {
                k: getattr(spec, k)
                for k in ("width", "depth", "mu_width", "mu_depth", "n_features", "aux_network")
            },
            "batch_size": spec.batch_size,
            "mu_ref_pa": self.mu_ref,
            "sigma_u": self.sigma_u,
            "sigma_mu": self.sigma_mu,
            "sigma_factor_u": self.sigma_factor_u,
            "sigma_factor_u_rule": self.sigma_factor_u_rule,
            "sigma_ratio_z": self.sigma_ratio_z,
            "sigma_ratio_z_rule": self.sigma_ratio_z_rule,
            "learning_rate": self.config.learning_rate,
            "pde_weight": self.config.pde_weight,
            "pde_weight_rule": self.pde_weight_rule,
            "decided": {k: getattr(self.config, k) for k in self.decided},
            "fit_size_rule": self.fit_size_rule,
            "small_fit": self.small_fit,
            "pde_margin": sorted(set(self.pde_margin)),
            "ensemble": self.ensemble,
            "datasets_per_chunk": self.datasets_per_chunk,
            "devices": len(self.placement.devices),
            "parallel": self.placement.mode,
        }

    @property
    def notes(self) -> list[str]:
        """Run notes on what the plan changed of the request: the Adam steps cut at
        ``lbfgs_from`` for an L-BFGS phase, rounded up to whole blocks."""
        cfg, notes, adam = self.config, [], self.steps_cut
        if adam != cfg.steps:
            how = "decided" if "steps" in self.decided else "asked"
            notes.append(
                f"steps={cfg.steps} {how}; {adam} Adam steps ran (lbfgs_from={cfg.lbfgs_from}) "
                f"and then an L-BFGS phase of {self.lbfgs_steps} iterations"
                + (
                    f" (the kept law's fit goes on to {self.lbfgs_continued_to} where it "
                    "lowers the loss)"
                    if self.lbfgs_continued_to > self.lbfgs_steps
                    else ""
                )
                + ("" if self.lbfgs_skipped is None else f" (not run: it {self.lbfgs_skipped})")
            )
        if self.steps != adam:
            notes.append(
                f"steps={adam} rounded up to {self.steps}: a whole number of "
                f"sync_interval={cfg.sync_interval} blocks"
            )
        return notes


def plan(
    datasets: Sequence[Dataset],
    cfg: Config,
    *,
    form: forms.Form,
    law: str | None = None,
    devices: int | str | None = None,
    backend: str = "cpu",
    stacked: bool = False,
    estimates: Sequence[float | None] | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool | str = False,
    facts: Sequence[defaults.DataFacts | None] | None = None,
) -> Plan:
    """The plan of one law's fit of ``datasets`` (the run's members: one dataset, a
    batch, or the z-slices of a slicewise fit) with the request ``cfg``.

    ``form``: the PDE form that ``cfg.pde`` stands for with these data
    (:func:`helmholtz_pinn.pinn.forms.resolve`, looked up once by the caller); ``law``: the law
    of this fit, one of :func:`laws` (default its first); ``devices``
    as :func:`helmholtz_pinn.fit.placement.plan` takes it; ``backend`` JAX's default
    backend ("gpu": TF32 may apply); ``stacked``: members on a leading axis;
    ``estimates``: the datasets' AHI estimates (Pa) where computed; ``checkpoint_dir``
    and ``resume``: where this fit checkpoints and how it resumes (a resumed stacked
    run keeps its saved chunk size, :func:`saved_chunk_size`, else the memory decides);
    ``facts``: the datasets' :func:`rule_facts` where the caller has them.
    """
    first = datasets[0]
    tried = laws(cfg, first.n_freq)
    facts = rule_facts(datasets) if facts is None else facts
    cfg, decided, size_rule, small = decide_schedule(cfg, facts)
    weight, weight_rule = pde_weight(cfg, facts)
    if cfg.pde_weight is None:
        cfg, decided = cfg.replace(pde_weight=weight), (*decided, "pde_weight")
    spec = spec_of(cfg, form.name, first.ndim, first.n_freq, first.n_comp, law or tried[0])
    lbfgs = lbfgs_steps(datasets, cfg, form, judged=len(tried) > 1)
    steps = adam_steps(cfg, lbfgs)
    mu_ref = reference_modulus(datasets, cfg, estimates)
    factor, rule = u_factor(datasets, cfg, facts)
    factor, sigma_u, sigma_mu = fourier_scales(datasets, cfg, mu_ref, factor)
    ratio_z, ratio_rule = z_ratio(datasets, cfg, spec.width)
    margins = tuple(pde_margin(d, cfg, form, mu_ref) for d in datasets)
    saved = saved_chunk_size(checkpoint_dir) if resume and stacked else None
    size, rows, where = layout(datasets, cfg, spec, form, stacked, devices, saved)
    skipped = None
    if lbfgs and len(where.devices) > 1:
        skipped = f"runs on one device; this fit used {len(where.devices)}"
    tf32_applies = backend == "gpu" and jax.config.jax_default_matmul_precision is None
    tf32 = placement.tf32_steps(cfg, steps, lbfgs, skipped is None, tf32_applies)
    continued = LBFGS_STEPS if len(tried) > 1 and cfg.lbfgs_steps is None and lbfgs else lbfgs
    folder = None if checkpoint_dir is None else Path(checkpoint_dir)
    return Plan(
        cfg, tried, spec, steps, lbfgs, continued, skipped, tf32, mu_ref, sigma_u, sigma_mu,
        factor, margins, stacked, size, rows, where, folder, resume, rule, decided, size_rule,
        small, ratio_z, ratio_rule, placement.float32_algorithm(spec.width, tf32_applies),
        weight_rule,
    )  # fmt: skip


def plans(
    datasets: Sequence[Dataset],
    cfg: Config,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool | str = False,
    **where,
) -> tuple[Plan, ...]:
    """The plans of a run, one per law it may fit (:func:`laws`; for one dataset in the
    order of :func:`helmholtz_pinn.assess.laws.prior`, the law the classical estimate
    favours first), each by :func:`plan` with ``where`` (form, devices, backend, stacked,
    estimates). Where auto fits several laws, each checkpoints in its own subfolder
    ``checkpoint_dir/<law>``, and a ``resume="strict"`` holds for the first law only (the
    run continued began with it). The data's facts (:func:`rule_facts`) are read once
    for all the plans."""
    tried = laws(cfg, datasets[0].n_freq)
    if len(tried) > 1 and len(datasets) == 1:
        tried = law_choice.prior(datasets[0])
    where.setdefault("facts", rule_facts(datasets))
    out = []
    for i, law in enumerate(tried):
        folder = checkpoint_dir
        if len(tried) > 1 and folder is not None:
            folder = Path(folder) / law
        mode = True if i and resume == "strict" else resume
        out.append(plan(datasets, cfg, law=law, checkpoint_dir=folder, resume=mode, **where))
    return tuple(out)


# --- one rule per resolved field ---------------------------------------------------


def laws(cfg: Config, n_freq: int) -> tuple[str, ...]:
    """The laws a run may fit: ``mu_model`` as asked; "auto" the laws of
    :data:`helmholtz_pinn.assess.laws.ORDER` (fitted one after the other until one is
    kept, :mod:`helmholtz_pinn.fit.law_choice`), or per-frequency for one frequency (no
    law to choose)."""
    if cfg.mu_model != "auto":
        return (cfg.mu_model,)
    return ("per-frequency",) if n_freq == 1 else tuple(law_choice.ORDER)


def program(
    cfg: Config, ndim: int, n_freq: int, n_comp: int, mu_model: str | None = None
) -> train.Spec:
    """:func:`spec_of` with the form that ``cfg.pde`` stands for with data of ``n_comp``
    components (:func:`helmholtz_pinn.pinn.forms.resolve`): the compiled program's key
    for studies and tests that plan no run."""
    return spec_of(cfg, forms.resolve(cfg.pde, n_comp), ndim, n_freq, n_comp, mu_model)


def spec_of(
    cfg: Config, pde: str, ndim: int, n_freq: int, n_comp: int, mu_model: str | None = None
) -> train.Spec:
    """The compiled program's key (:class:`helmholtz_pinn.pinn.train.Spec`) of ``cfg``
    with the PDE form ``pde`` (resolved: not "auto") for data of these shapes and the law
    ``mu_model`` (None: ``cfg``'s, "auto" at one frequency per-frequency, :func:`laws`;
    "auto" at several is a ConfigError: the law is chosen by fitting): the network sizes,
    the auxiliary network and the batch from the tables above by ``ndim`` where ``cfg``
    leaves them None."""
    if mu_model is None:
        mu_model = laws(cfg, n_freq)[0] if n_freq == 1 else cfg.mu_model
    sized = {
        "width": WIDTH,
        "n_features": N_FEATURES,
        "mu_width": MU_WIDTH,
        "mu_depth": MU_DEPTH,
        "batch_size": BATCH_SIZE,
        "aux_network": AUX_NETWORK,
    }
    return train.Spec(
        ndim,
        n_freq,
        n_comp,
        depth=cfg.depth,
        activation=cfg.activation,
        pde=pde,
        mu_model=mu_model,
        pde_weight=defaults.PDE_WEIGHT if cfg.pde_weight is None else cfg.pde_weight,
        pde_warmup=cfg.pde_warmup,
        **{k: getattr(cfg, k) or table[ndim] for k, table in sized.items()},
    )


def lbfgs_steps(datasets: Sequence[Dataset], cfg: Config, form: forms.Form, *, judged: bool) -> int:
    """The L-BFGS phase's iterations: ``lbfgs_steps`` as asked; None: :data:`LBFGS_STEPS`
    (:data:`AUTO_LBFGS_STEPS` for the fits of a law choice, ``judged``) for one fit of a
    form with ``lbfgs_default`` (navier; one dataset, no ensemble) longer than
    ``lbfgs_from`` whose mask has at most ``lbfgs_points`` voxels and whose best field's
    noise fraction is below :data:`CLEAN_NOISE`, else 0."""
    if cfg.lbfgs_steps is not None:
        return cfg.lbfgs_steps
    one = len(datasets) == 1 and cfg.ensemble == 1
    long = one and form.lbfgs_default and cfg.steps > cfg.lbfgs_from
    whole = long and int(np.count_nonzero(datasets[0].mask)) <= cfg.lbfgs_points
    clean = whole and problem.best_noise(datasets[0]) < CLEAN_NOISE
    return (AUTO_LBFGS_STEPS if judged else LBFGS_STEPS) if clean else 0


def adam_steps(cfg: Config, lbfgs: int) -> int:
    """The Adam steps that run: ``steps``, cut at ``lbfgs_from`` when an L-BFGS phase
    follows (``lbfgs`` > 0), rounded up to whole ``sync_interval`` blocks (the host loop
    runs blocks)."""
    steps = min(cfg.steps, cfg.lbfgs_from) if lbfgs else cfg.steps
    return math.ceil(steps / cfg.sync_interval) * cfg.sync_interval


def reference_modulus(
    datasets: Sequence[Dataset], cfg: Config, estimates: Sequence[float | None] | None = None
) -> float:
    """mu_ref in Pa, one for all members: the configured one, else the median of the
    datasets' estimates (``estimates``, their AHI estimates where computed, else
    :func:`helmholtz_pinn.pinn.problem.estimate_reference`)."""
    if cfg.mu_ref is not None:
        return float(cfg.mu_ref)
    estimates = [None] * len(datasets) if estimates is None else estimates
    moduli = [
        float(e) if e is not None else problem.estimate_reference(d)
        for d, e in zip(datasets, estimates, strict=True)
    ]
    return float(np.median(moduli))


def sigma_factor_u(cfg: Config, ndim: int, noise: float = 0.0) -> float:
    """The configured ``sigma_factor_u``, else the tuned region's factor by the dimension
    and the best field's noise fraction ``noise``
    (:func:`helmholtz_pinn.fit.defaults.base_factor_u`)."""
    if cfg.sigma_factor_u is not None:
        return cfg.sigma_factor_u
    return defaults.base_factor_u(ndim, noise)


def rule_facts(datasets: Sequence[Dataset]) -> list[defaults.DataFacts | None]:
    """Per dataset its :class:`helmholtz_pinn.fit.defaults.DataFacts` where a rule reads
    them (the best field noisy, noise fraction at least :data:`CLEAN_NOISE`, or the data
    2-D: the rules for noisy and for coarse 2-D data need u's wavelength) and u shows a
    wavelength, else None (clean volumes need no wavelength estimate)."""
    out: list[defaults.DataFacts | None] = []
    for d in datasets:
        facts = None
        if d.ndim == 2 or problem.best_noise(d) >= CLEAN_NOISE:
            try:
                facts = defaults.facts_of(d)
            except InputError:  # u shows no wavelength: the rules by dimension and noise
                pass
        out.append(facts)
    return out


def decide_schedule(
    cfg: Config, facts: Sequence[defaults.DataFacts | None]
) -> tuple[Config, tuple[str, ...], str, bool]:
    """(``cfg`` with its data-decided fields filled, the fields filled, the rule in
    words, whether the small fit's rule applied): where some dataset's ``facts``
    (:func:`rule_facts`; they share one program) fall in the small fit's region, the
    network sizes, batch, steps and rate of
    :func:`helmholtz_pinn.fit.defaults.fit_size`; else
    :data:`~helmholtz_pinn.fit.defaults.STEPS` and
    :data:`~helmholtz_pinn.fit.defaults.LEARNING_RATE`. Only fields ``cfg`` leaves None
    are filled: a setting given is kept."""
    rules = [defaults.fit_size(f) for f in facts if f is not None]
    small = next((r for r in rules if r.value), None)
    values = {"steps": defaults.STEPS, "learning_rate": defaults.LEARNING_RATE}
    values = small.value if small is not None else values
    filled = {k: v for k, v in values.items() if getattr(cfg, k) is None}
    rule = small.rule if small is not None else "the tuned region's steps and rate"
    return cfg.replace(**filled), tuple(filled), rule, small is not None


def pde_weight(cfg: Config, facts: Sequence[defaults.DataFacts | None]) -> tuple[float, str]:
    """(the PDE loss's weight, the rule in words): the configured ``pde_weight``; else the
    largest over the datasets' ``facts`` (:func:`rule_facts`; they share one program)
    of :func:`helmholtz_pinn.fit.defaults.pde_weight` where the rule is backed; else
    :data:`~helmholtz_pinn.fit.defaults.PDE_WEIGHT` (clean volumes have no facts: the
    rule raises the weight on noisy data only)."""
    if cfg.pde_weight is not None:
        return cfg.pde_weight, "configured"
    backed = [r for r in (defaults.pde_weight(f) for f in facts if f is not None) if r.backed]
    if not backed:
        return defaults.PDE_WEIGHT, f"{defaults.PDE_WEIGHT:g}: the tuned region's"
    return max(backed, key=lambda r: r.value)[:2]


def u_factor(
    datasets: Sequence[Dataset],
    cfg: Config,
    facts: Sequence[defaults.DataFacts | None] | None = None,
) -> tuple[float, str]:
    """(sigma_factor_u, the rule that set it, in words): the configured factor; else
    (``sigma_u`` configured) :func:`sigma_factor_u`'s, which then scales nothing; else the
    smallest over ``datasets`` (they share one program) of
    :func:`helmholtz_pinn.fit.defaults.sigma_factor_u` on the dataset's ``facts`` (those
    of :func:`rule_facts`, computed here if not given) where it has them, else
    :func:`sigma_factor_u` by the dimension and the noise."""
    ndim = datasets[0].ndim
    if cfg.sigma_factor_u is not None:
        return cfg.sigma_factor_u, "configured"
    if cfg.sigma_u is not None:
        return sigma_factor_u(cfg, ndim), "unused: sigma_u configured"
    facts = rule_facts(datasets) if facts is None else facts
    chosen: list[tuple[float, str]] = []
    for d, f in zip(datasets, facts, strict=True):
        if f is not None:
            chosen.append(defaults.sigma_factor_u(f)[:2])
            continue
        noise = problem.best_noise(d)
        value = sigma_factor_u(cfg, ndim, noise if ndim == 2 else 0.0)
        chosen.append((value, f"{value:g}: {ndim}-D data, noise fraction {noise:.3g}"))
    return min(chosen, key=lambda c: c[0])


def fourier_scales(
    datasets: Sequence[Dataset], cfg: Config, mu_ref: float, factor: float | None = None
) -> tuple[float, float, float]:
    """(sigma_factor_u, sigma_u, sigma_mu): the scales (cycles per field of view) as
    configured, else the factor times the largest L / lambda_min over ``datasets`` (so
    every dataset's shortest wave is representable); the u factor ``factor``, else
    :func:`u_factor`'s."""
    cycles = max(problem.wave_cycles(d, mu_ref) for d in datasets)
    factor = u_factor(datasets, cfg)[0] if factor is None else factor
    return factor, cfg.sigma_u or factor * cycles, cfg.sigma_mu or cfg.sigma_factor_mu * cycles


def z_ratio(datasets: Sequence[Dataset], cfg: Config, width: int) -> tuple[float, str]:
    """(sigma_ratio_z, the rule in words): the configured ratio; else for 3-D data
    :func:`helmholtz_pinn.fit.defaults.sigma_ratio_z` of the medians over ``datasets``
    (they share one program) of the wave's through-plane share estimated from u
    (:func:`helmholtz_pinn.assess.wavelength.estimate_dataset`, once per dataset) and of
    the best field's noise fraction, for a u-network ``width`` wide, where the rule is
    backed; else 0.25. 2-D data have no slice axis (the ratio is unused)."""
    if cfg.sigma_ratio_z is not None:
        return cfg.sigma_ratio_z, "configured"
    low = defaults.SIGMA_RATIO_Z[0]
    if datasets[0].ndim != 3:
        return low, "unused: 2-D data"
    shares = []
    for d in datasets:
        try:
            shares.append(wavelength.estimate_dataset(d).through_plane_at_shortest)
        except InputError:  # u shows no wavelength
            shares.append(float("nan"))
    finite = [s for s in shares if math.isfinite(s)]
    share = float(np.median(finite)) if finite else float("nan")
    noise = float(np.median([problem.best_noise(d) for d in datasets]))
    rule = defaults.sigma_ratio_z(share, noise, width)
    if rule.backed:
        return rule.value, rule.rule
    return low, f"{low:g}: {width}-wide networks (the data's {rule.value:.3g} is proposed there)"


def pde_margin(dataset: Dataset, cfg: Config, form: forms.Form, mu_ref: float) -> int:
    """Voxels along the field of view's in-plane edges without a PDE residual
    (:func:`helmholtz_pinn.pinn.problem.pde_rows`): the configured ``pde_margin``,
    else the ``form``'s ``pde_margin`` fraction (:class:`helmholtz_pinn.pinn.forms.Form`,
    by the data's dimension)
    of :func:`helmholtz_pinn.pinn.problem.shortest_wavelength` (at ``mu_ref``, Pa) in
    in-plane voxels (their mean size, m), rounded, at least 1. The layer it leaves out
    scales with the wavelength, not with the voxel."""
    if cfg.pde_margin is not None:
        return cfg.pde_margin
    fraction = form.pde_margin.get(dataset.ndim, 0.0)
    if not fraction:
        return 0
    voxel = float(np.mean(dataset.spacing[:2]))
    return max(1, round(fraction * problem.shortest_wavelength(dataset, mu_ref) / voxel))


CHUNKS_FILE = "chunks.json"


def saved_chunk_size(folder: str | Path | None) -> int | None:
    """The datasets per chunk that a run saved in its checkpoint ``folder``, or None."""
    saved = None if folder is None else Path(folder) / CHUNKS_FILE
    if saved is None or not saved.is_file():
        return None
    return int(json.loads(saved.read_text())["datasets_per_chunk"])


def layout(
    datasets,
    cfg: Config,
    spec: train.Spec,
    form: forms.Form,
    stacked: bool,
    devices,
    saved: int | None,
):
    """(datasets per chunk, voxel rows per problem, the placement of one chunk): all
    datasets at once for one fit or an ensemble of one dataset; else ``saved`` (a resume),
    ``max_members_per_chunk`` or the memory estimate
    (:func:`helmholtz_pinn.fit.memory.members_per_chunk`). Every chunk is padded to that
    size and to the largest mask, so one placement holds for all
    (:func:`helmholtz_pinn.fit.placement.plan`)."""
    rows = max(voxel_rows(d, form) for d in datasets) if stacked else voxel_rows(datasets[0], form)
    e = cfg.ensemble
    if not stacked or len(datasets) == 1:
        size = len(datasets)
    elif saved is not None:
        size = saved
    else:
        members = cfg.max_members_per_chunk
        if members is None:
            n = len(jax.devices()) if devices in (None, "all") else int(devices)
            count = voxel_rows(datasets[0], form)
            members = memory.members_per_chunk(spec, count, n) or len(datasets)
        size = max(1, min(len(datasets), members // e))
    members = size * e if stacked else (e if e > 1 else 0)
    where = placement.plan(
        devices,
        rows=rows,
        per_voxel=memory.bytes_per_voxel(spec.ndim, spec.n_freq, spec.n_comp),
        batch_size=spec.batch_size,
        patch_size=spec.patch_size,
        members=members,
        shared_problem=members > 0 and not stacked,
    )
    return size, rows, where


def voxel_rows(dataset: Dataset, form: forms.Form) -> int:
    """The voxel rows :func:`helmholtz_pinn.pinn.problem.prepare` gives ``dataset`` (its
    mask after the ``form``'s transform), without preparing it."""
    return int((dataset if form.transform is None else form.transform(dataset)).mask.sum())


def problems(datasets: Sequence[Dataset], cfg: Config) -> list[Prepared]:
    """``datasets`` as the problems of one run's members (sharing mu_ref and the Fourier
    scales; the law as :func:`program` resolves it), by the rules above but without a
    layout (no devices planned): for studies and tests of the problems themselves."""
    first = datasets[0]
    facts = rule_facts(datasets)
    cfg = decide_schedule(cfg, facts)[0]
    spec = program(cfg, first.ndim, first.n_freq, first.n_comp)
    mu_ref = reference_modulus(datasets, cfg)
    factor = u_factor(datasets, cfg, facts)[0]
    factor, sigma_u, sigma_mu = fourier_scales(datasets, cfg, mu_ref, factor)
    shared = dict(spec=spec, mu_ref=mu_ref, sigma_u=sigma_u, sigma_mu=sigma_mu)
    shared.update(sigma_factor_u=factor, weighting=cfg.weighting, noise_floor=cfg.noise_floor)
    return [
        problem.prepare(d, **shared, pde_margin=pde_margin(d, cfg, spec.form, mu_ref))
        for d in datasets
    ]


def prepare_one(dataset: Dataset, cfg: Config) -> Prepared:
    """One dataset's problem (:func:`problems`)."""
    return problems([dataset], cfg)[0]
