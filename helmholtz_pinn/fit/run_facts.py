"""The run facts of a PINN fit (``metrics.json``) and the notes that say how it went.

Units: moduli in Pa, lengths in m, times in s, losses nondimensional.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import numpy as np

from helmholtz_pinn.fit.defaults import PDE_WEIGHT, SIGMA_FACTOR_U_2D, SIGMA_FACTOR_U_3D
from helmholtz_pinn.fit.plan import Plan
from helmholtz_pinn.pinn import dispersion, train
from helmholtz_pinn.pinn.problem import Prepared
from helmholtz_pinn.report.records import RunFacts

if TYPE_CHECKING:
    from helmholtz_pinn.fit.training import Trained

SHORT_RUN = "short run"


def run_facts(
    prep: Prepared, plan: Plan, state, history: list[dict], wall_s: float, **extra
) -> RunFacts:
    """The run facts of ``metrics.json``: steps, wall time (s), device, scales, the PDE
    margin (voxels) and the fraction of the mask's voxels with a PDE residual, final
    losses (nondimensional), retries, the ``plan`` (:attr:`Plan.record`: what was asked
    and what ran), and the run notes (:func:`run_notes`, a u factor moved by the noisy
    rule, the small fit's settings where the data decided them); ``extra`` adds or
    overrides entries."""
    last, cfg = (history[-1] if history else {}), plan.config
    facts: RunFacts = {
        "steps": int(np.asarray(state.step).max()),
        "wall_time_s": wall_s,
        "device": str(jax.devices()[0]),
        "ensemble": cfg.ensemble,
        "pde": prep.spec.pde,
        "mu_ref_pa": prep.scales.mu_ref,
        "length_m": prep.scales.length,
        "sigma_u": prep.sigma_u,
        "sigma_mu": prep.sigma_mu,
        "sigma_factor_u": prep.sigma_factor_u,
        "batch_size": prep.spec.batch_size,
        "pde_margin": prep.pde_margin,
        "pde_fraction": prep.pde_fraction,
        **{f"final_{k}": last.get(f"last_{k}") for k in ("loss", "data", "pde")},
        "retries": last.get("retries", 0),
        "weighting": cfg.weighting,
        "noise_fraction": [
            [round(float(n), 4) if np.isfinite(n) else None for n in row] for row in prep.noise
        ],
        "field_weight": np.round(np.asarray(prep.problem.weight, float), 4).tolist(),
        "assumption": _assumption(prep.spec),
        "plan": plan.record,
        **extra,
    }
    facts["notes"] = run_notes(plan, facts)
    auto = cfg.sigma_factor_u is None and cfg.sigma_u is None
    d = prep.spec.ndim
    base = SIGMA_FACTOR_U_2D if d == 2 else SIGMA_FACTOR_U_3D
    if auto and prep.sigma_factor_u != base:
        facts["notes"].append(
            f"the u-network's Fourier scale uses sigma_factor_u={prep.sigma_factor_u:g}, not "
            f"{base:g} ({plan.sigma_factor_u_rule}): a smoother wave network, whose "
            "Laplacian does not pull the modulus low" + ("; a volume, where there is one, "
            "is the better input" if d == 2 else "")
        )  # fmt: skip
    sized = [k for k in plan.decided if k != "pde_weight"]
    if plan.small_fit and sized:
        settings = ", ".join(f"{k}={getattr(plan.config, k):g}" for k in sized)
        facts["notes"].append(
            f"{plan.fit_size_rule}: {settings} (larger networks trained longer fitted the "
            "noise; a setting given explicitly is kept)"
        )
    if "pde_weight" in plan.decided and cfg.pde_weight != PDE_WEIGHT:
        facts["notes"].append(
            f"the PDE loss weighs {cfg.pde_weight:g}, not {PDE_WEIGHT:g} "
            f"({plan.pde_weight_rule}): a stronger physics prior where the data fit the noise"
        )
    return facts


def run_notes(plan: Plan, facts: dict) -> list[str]:
    """What a user should know about how the run went: a resume (or a resume that found
    no checkpoint), the request the plan cut or rounded (:attr:`Plan.notes`: the Adam
    steps cut at ``lbfgs_from`` for an L-BFGS phase, rounded up to whole blocks), an
    early stop, a fit that
    ended inside the PDE warm-up or before the learning-rate schedule could act, a PDE
    margin (how much of the mask it leaves without a residual), and the facts'
    assumption. The warm-up note also comes as a
    :class:`~helmholtz_pinn.assess.fit_checks.FitQualityWarning` (from
    :func:`helmholtz_pinn.fit.inversion.invert`)."""
    cfg, planned = plan.config, plan.steps
    ran, notes = facts["steps"], []
    notes += [
        f"{u}: deleted; resumed from an older one" for u in facts.get("unreadable_checkpoints", [])
    ]
    if facts.get("resumed_from_step") is not None:
        done, step = facts.get("chunks_already_done"), facts["resumed_from_step"]
        past = f"(at or past steps={plan.steps_cut}: no training)"
        where = f"of {planned}" if step < planned else past
        notes.append(
            f"resumed from step {step} {where} ({facts['resumed_from']})"
            + (f"; {done} of {facts['chunks']} chunks were finished already" if done else "")
        )
    elif facts.get("no_checkpoint_in"):
        notes.append(f"no usable checkpoint in {facts['no_checkpoint_in']}: started at step 0")
    if facts.get("cleared_checkpoints"):
        notes.append(
            f"removed an earlier run's checkpoints from {facts['cleared_checkpoints']} once "
            "this run's first checkpoint was written: a fit without resume=True starts afresh"
        )
    notes += plan.notes
    if ran < planned:
        notes.append(f"stopped early at step {ran} of {planned}: the loss stalled at min_lr")
    if ran < cfg.pde_warmup:
        notes.append(
            f"{SHORT_RUN}: the fit ended at step {ran}, before the PDE weight finished its "
            f"warm-up (pde_warmup={cfg.pde_warmup}); the modulus is barely constrained: "
            "use more steps (or a shorter pde_warmup)"
        )
    elif ran <= cfg.plateau_patience * cfg.sync_interval:
        notes.append(
            f"{SHORT_RUN}: {ran} steps are at most plateau_patience={cfg.plateau_patience} "
            "blocks: the learning-rate schedule never acted"
        )
    lbfgs = facts.get("lbfgs") or {}
    if lbfgs.get("skipped"):
        notes.append(f"no L-BFGS phase: it {lbfgs['skipped']}")
    elif lbfgs and not all(np.atleast_1d(lbfgs["kept"])):
        notes.append(
            "the L-BFGS phase did not lower the loss: a fit whose lbfgs.kept is false keeps "
            "its Adam result"
        )
    if facts.get("pde_margin") and facts.get("pde_fraction", 0) < 1:
        notes.append(
            f"the PDE residual within {facts['pde_margin']} voxel(s) of the field of view's "
            f"in-plane edges was left out of the loss ({1 - facts['pde_fraction']:.0%} of the "
            "mask's voxels): the modulus there is the mu-network's continuation from inside "
            "(pde_margin; 0 fits the PDE everywhere)"
        )
    if facts.get("dropped_components"):
        notes.append(
            f"dropped the empty component(s) {facts['dropped_components']} (0-based) of u "
            "(drop_empty_components)"
        )
    notes += facts.get("input_notes", [])
    return notes + ([facts["assumption"]] if facts.get("assumption") else [])


def _assumption(spec: train.Spec) -> str | None:
    """What a fit of a 2-D slice of three-component motion assumes, or None."""
    if spec.ndim != 2 or spec.n_comp != 3:
        return None
    return (
        "2-D slice of 3-D motion: through-plane derivatives taken as zero (waves in the "
        "slice plane); fit the volume when the neighbouring slices exist"
    )


def law_facts(scale: np.ndarray, frequency: np.ndarray) -> dict:
    """``law_scale`` (per frequency: |c_f| and arg c_f in degrees) and ``law_spread`` of
    the per-frequency factors ``scale`` (members, F) complex of a Voigt or springpot fit
    (:mod:`helmholtz_pinn.pinn.dispersion`; the mean over ensemble seeds or slices);
    empty when they are NaN (no law fitted, or one frequency)."""
    scale = np.asarray(scale, complex).reshape(-1, len(frequency))
    scale = scale[np.isfinite(scale).all(axis=1)]
    if not scale.size:  # no law fitted (NaN), or one frequency (none computed)
        return {}
    mean = scale.mean(axis=0)
    return {
        "law_scale": [
            {
                "frequency_hz": float(f),
                "abs": round(float(abs(c)), 4),
                "phase_deg": round(float(np.degrees(np.angle(c))), 2),
            }
            for f, c in zip(frequency, mean, strict=True)
        ],
        "law_spread": round(dispersion.spread(mean), 4),
    }


def member_law_facts(t: Trained) -> list[dict]:
    """:func:`law_facts` of trained members, one per Result:
    per dataset, or one over all the slices of a slicewise fit."""
    maps = t.fitted.maps
    if t.slicewise:
        return [law_facts(np.concatenate([s for *_, s in maps]), t.data.frequency)]
    return [law_facts(s, d.frequency) for (*_, s), d in zip(maps, t.datasets, strict=True)]
