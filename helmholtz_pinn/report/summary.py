"""A finished Result in a few lines: the map, its targets, how it ran and one verdict.

:func:`summary` is what ``print(result)`` and the command line show::

    map (medians over the mask's 8000 voxels):
      60 Hz: G' 2.93 kPa, G'' 368 Pa, phase angle 0.12 rad
    regions (at 60 Hz; size = equivalent diameter):
      background: G' 2.92 kPa, G'' 364 Pa (true G' 3 kPa, error 4.4%)
      target 2 (20 mm): G' 9.25 kPa, G'' 517 Pa (true G' 10 kPa, error 8.6%), contrast 0.90
      note: G'' often peaks at stiff targets ...
    accuracy: median G' error 4.6%, G'' error 17%, R 0.88 over the mask (...)
    run: 3000 steps, law voigt (chosen by the data), 668 s for the whole command
    verdict: the 8 fit checks passed (1 skipped: nothing to measure them on)

Moduli in Pa below 1 kPa, else in kPa; the phase angle is atan(G''/G') in rad.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# failed checks that a c/f swap in convert's axes would also cause
AXES_CHECKS = {"ahi_agreement", "pde_residual", "data_fit", "law_consistency"}
# shown where G'' is: what a newcomer would otherwise read as a viscous lesion
LOSS_NOTE = (
    "G'' often peaks at stiff targets where the tissue's G'' is flat: an artefact at sharp "
    "G' edges (PINN and AHI alike), not a viscous lesion (docs/getting-started.md#reading-the-map)"
)


def pascal(value: float | None) -> str:
    """A modulus in Pa as text, in kPa from 1 kPa up: ``pascal(3040) == '3.04 kPa'``."""
    if value is None or not math.isfinite(value):
        return "-"
    if abs(value) >= 1000:
        return f"{value / 1000:.3g} kPa"
    return f"{value:.3g} Pa"


def target_sizes(regions: np.ndarray | None, spacing: np.ndarray) -> dict[str, float]:
    """Each region label's size in mm: the diameter of the disk of the area of its largest
    section in the x-y plane, d = 2 sqrt(A / pi) (the whole region of a 2-D grid; the
    z-slice where it is widest of a volume, so a cylinder or a ball reads as its
    diameter); ``spacing`` in m. Empty without regions."""
    if regions is None:
        return {}
    regions = np.asarray(regions)
    area = float(spacing[0]) * float(spacing[1]) * 1e6  # mm^2 of one voxel's section
    sections = regions[..., None] if regions.ndim == 2 else regions
    out = {}
    for label in np.unique(regions).tolist():
        widest = int(np.max(np.sum(sections == label, axis=(0, 1))))
        out[str(label)] = 2 * math.sqrt(widest * area / math.pi)
    return out


def summary(result: Any, *, wall_time_s: float | None = None, advice: bool = True) -> str:
    """The lines of :mod:`this module <helmholtz_pinn.report.summary>` for ``result`` (a
    :class:`~helmholtz_pinn.report.result.Result`). ``wall_time_s``: the whole command's
    time (s), shown instead of the fit's; ``advice=False`` leaves the failed checks' advice
    out of the verdict (the command line prints it as warnings)."""
    facts = result.metrics
    lines = _map_lines(facts)
    lines += _target_lines(facts, result.dataset)
    if lines:
        lines.append(f"  note: {LOSS_NOTE}")
    accuracy = _accuracy(facts)
    if accuracy:
        lines.append(f"accuracy: {accuracy}")
    lines.append(f"run: {_run(facts, result.config, wall_time_s)}")
    lines += _verdict(facts.get("fit_quality", []), advice, baseline="method" in facts)
    data = result.dataset
    failed = {c["name"] for c in facts.get("fit_quality", []) if not c["passed"]}
    if data is not None and data.n_comp == data.n_freq > 1 and failed & AXES_CHECKS:
        lines.append(
            f"  the data have as many components as frequencies ({data.n_comp}): a file "
            "converted with c and f swapped passes every shape check; check its axes="
        )
    return "\n".join(lines)


def _map_lines(facts: dict) -> list[str]:
    clinical = facts.get("clinical") or {}
    per_f = clinical.get("mask") or {}
    if not per_f:
        return []
    voxels = facts.get("metric_voxels")
    where = f"the mask's {voxels} voxels" if voxels else "the mask"
    lines = [f"map (medians over {where}):"]
    for label, q in sorted(per_f.items(), key=_by_number):
        lines.append(
            f"  {_hz(label)}: G' {pascal(q.get('storage'))}, G'' {pascal(q.get('loss'))}, "
            f"phase angle {_rad(q.get('phase'))}"
        )
    return lines


def _target_lines(facts: dict, dataset) -> list[str]:
    """Per region: the recovered medians at the first frequency and, with the truth, the
    region's error and contrast (the headline median hides them)."""
    clinical = facts.get("clinical") or {}
    by_f = clinical.get("regions") or {}
    if not by_f:
        return []
    label, regions = min(by_f.items(), key=_by_number)  # the lowest frequency
    sizes = {}
    if dataset is not None:
        sizes = target_sizes(dataset.regions, dataset.spacing)
    truth = facts.get("regions") or {}
    from helmholtz_pinn.assess.metrics import shown_contrasts

    contrast, loss = shown_contrasts(
        facts.get("contrast_transfer"), facts.get("contrast_transfer_loss")
    )  # a viscosity-only target has a G'' contrast to read, not a G' one
    lines = [f"regions (at {_hz(label)}; size = equivalent diameter):"]
    for region, q in sorted(regions.items(), key=_by_number):
        name = "background" if region == "1" else f"target {region}"
        if region != "1" and region in sizes:
            name += f" ({sizes[region]:.0f} mm)"
        text = f"  {name}: G' {pascal(q.get('storage'))}, G'' {pascal(q.get('loss'))}"
        known = truth.get(region) or {}
        if known.get("true_median_storage_pa") is not None:
            error = known.get("median_rel_error_storage")
            text += f" (true G' {pascal(known['true_median_storage_pa'])}, error {_pct(error)})"
        if region in contrast:
            text += f", contrast {contrast[region]:.2f}"
        elif region in loss:
            text += f", G'' contrast {loss[region]:.2f}"
        lines.append(text)
    return lines


def _accuracy(facts: dict) -> str:
    parts = []
    storage, loss = facts.get("median_rel_error_storage"), facts.get("median_rel_error_loss")
    if isinstance(storage, float):
        parts.append(f"median G' error {_pct(storage)}")
    if isinstance(loss, float):
        parts.append(f"G'' error {_pct(loss)}")
    if isinstance(facts.get("pearson_r_storage"), float):
        parts.append(f"R {facts['pearson_r_storage']:.2f}")
    if not parts:
        return ""
    text = ", ".join(parts) + " over the mask"
    if facts.get("regions"):
        text += " (mostly background voxels: the targets' errors are above)"
    return text


def _run(facts: dict, config: Any, wall_time_s: float | None) -> str:
    parts = []
    if facts.get("method"):
        parts.append(f"baseline {facts['method']}")
    if isinstance(facts.get("steps"), int):
        steps = f"{facts['steps']} steps"
        lbfgs = facts.get("lbfgs") or {}
        if lbfgs and not lbfgs.get("skipped"):
            steps += f" + {lbfgs['steps']} L-BFGS"
        parts.append(steps)
    law = facts.get("law") or {}
    model = law.get("mu_model") or getattr(config, "mu_model", None)
    if model:
        how = "named"
        if law.get("tried"):
            how = "chosen by the data" if law.get("determined", True) else "undetermined"
        parts.append(f"law {model} ({how})")
    seconds = wall_time_s
    if seconds is not None:
        time = f"{seconds:.0f} s for the whole command"
    else:
        seconds = law.get("wall_time_s") or facts.get("wall_time_s")
        time = f"{seconds:.1f} s" if isinstance(seconds, float | int) else ""
        if law.get("tried") and time:
            fits = law.get("fits", len(law["tried"]))
            time += f" for the {fits} fit{'s' if fits != 1 else ''}"
    if facts.get("resumed_from_step"):
        time += f" (this process; resumed from step {facts['resumed_from_step']})"
    if time:
        parts.append(time)
    return ", ".join(parts)


def _verdict(checks: list[dict], advice: bool, baseline: bool = False) -> list[str]:
    """One verdict: every check passed, or which failed and what to do."""
    if not checks:
        return []
    failed = [c for c in checks if not c["passed"]]
    if baseline and not failed:  # one loose check: it cannot vouch for the map
        return [
            "verdict: a baseline is checked only for a modulus within range (passed); it "
            "has no fit to the data to judge"
        ]
    skipped = sum(bool(c.get("skipped")) for c in checks)
    if not failed:
        extra = f" ({skipped} skipped: nothing to measure them on)" if skipped else ""
        checked = "the fit check" if len(checks) == 1 else f"the {len(checks)} fit checks"
        return [f"verdict: {checked} passed{extra}"]
    names = ", ".join(c["name"] for c in failed)
    head = (
        f"verdict: {len(failed)} of {len(checks)} fit checks failed ({names}): do not trust "
        "the map before acting on "
    )
    if not advice:
        return [head + ("the warning below" if len(failed) == 1 else "the warnings below")]
    lines = [head + ("this:" if len(failed) == 1 else "these:")]
    return lines + [f"  {c['name']}: {c['message']}" for c in failed]


def _by_number(item: tuple[str, Any]) -> float:
    """Sort key of a ``("60Hz", ...)`` or ``("10", ...)`` item: its leading number."""
    head = item[0].split("Hz")[0].split("-")[0]
    try:
        return float(head)
    except ValueError:
        return math.inf


def _hz(label: str) -> str:
    return label.replace("Hz", " Hz")


def _rad(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.2f} rad"


def _pct(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1%}" if value < 0.1 else f"{value:.0%}"
