"""The baselines' Gaussian width, measured: error of AHI on the scalar four-target phantom
and of curl-MDEV on the elastic fixture against sigma (voxels), clean and at -20 dB.

For each sigma in ``--sigmas`` (and no smoothing) and each noise level, the median
relative error of G' = Re(mu) over the mask, the Pearson R of G' and the contrast
transfer of the largest target (region 2) (``helmholtz_pinn.evaluate``), as
mean and range over ``--seeds`` noise draws. Prints a Markdown table (recorded in
docs/defaults.md, "Baseline smoothing widths") and, per method, the width the default rule picks
(:func:`best`; the library's ``lab.AHI_SIGMA`` and ``lab.CURL_SIGMA``). CPU, seconds.

    python scripts/baseline_sigma.py [--seeds 0 1 2] [--sigmas 0.5 0.75 1 1.5 2 2.5 3]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import lab

NOISE = (None, -20.0)


def score(mu, dataset) -> tuple[float, float, float]:
    """(median relative error of G', Pearson R of G', contrast transfer of region 2)."""
    m = hp.evaluate(mu, dataset)
    keys = ("median_rel_error_storage", "pearson_r_storage")
    values = [m[k] for k in keys] + [m["contrast_transfer"]["2"]]  # region 2: the largest
    return tuple(np.nan if v is None else v for v in values)


def sweep(name: str, clean, fn, sigmas, seeds) -> list[dict]:
    """One row per (noise, sigma): scores over the seeds (one draw when clean)."""
    rows = []
    for noise_db in NOISE:
        draws = (
            [clean]
            if noise_db is None
            else [
                dataclasses.replace(clean, u=lab.add_noise(clean.u, noise_db, seed=s))
                for s in seeds
            ]
        )
        for sigma in (None, *sigmas):
            smooth = (
                dict(smoothing="none") if sigma is None else dict(smoothing="gaussian", sigma=sigma)
            )
            s = np.array([score(fn(d, **smooth), d) for d in draws])  # (draws, 3)
            rows.append(dict(method=name, noise_db=noise_db, sigma=sigma, scores=s))
    return rows


def cell(values, pct: bool) -> str:
    """Mean over the draws, and the range when there are several."""
    f = (lambda v: f"{100 * v:.1f} %") if pct else (lambda v: f"{v:.3f}")
    if len(values) == 1:
        return f(values[0])
    return f"{f(np.mean(values))} ({f(np.min(values))} to {f(np.max(values))})"


def table(rows, spacing_mm) -> str:
    head = (
        "method",
        "noise",
        "sigma, voxels (mm)",
        "median error of G'",
        "R of G'",
        "contrast transfer, largest target",
    )
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        s, sigma = r["scores"], r["sigma"]
        sig = "none" if sigma is None else f"{sigma:g} ({sigma * spacing_mm[r['method']]:g})"
        noise = "clean" if r["noise_db"] is None else f"{r['noise_db']:g} dB ({len(s)} seeds)"
        cells = (cell(s[:, 0], True), cell(s[:, 1], False), cell(s[:, 2], True))
        lines.append(f"| {r['method']} | {noise} | {sig} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def best(rows, method: str, keep: float = 0.9) -> float:
    """The default rule: at -20 dB, the lowest median error of G' among the widths that
    keep at least ``keep`` of the best contrast transfer of the largest target (the
    median error alone favours blurring: the mask is mostly flat background)."""
    noisy = {
        r["sigma"]: r["scores"].mean(0)
        for r in rows
        if r["method"] == method and r["noise_db"] is not None and r["sigma"]
    }
    top = max(v[2] for v in noisy.values())
    return min((v[0], s) for s, v in noisy.items() if v[2] >= keep * top)[1]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--sigmas", type=float, nargs="+", default=[0.5, 0.75, 1, 1.5, 2, 2.5, 3])
    args = p.parse_args(argv)
    scalar = hp.simulate_phantom("four-target")
    elastic = hp.example("elastic-two-ellipse-slice")
    rows = sweep("ahi", scalar, hp.baseline, args.sigmas, args.seeds)
    rows += sweep("curl-mdev", elastic, hp.curl_mdev, args.sigmas, args.seeds)
    spacing_mm = {"ahi": scalar.spacing[0] * 1e3, "curl-mdev": elastic.spacing[0] * 1e3}
    print(table(rows, spacing_mm))
    for method in ("ahi", "curl-mdev"):
        print(f"\n{method}: default sigma by the rule of best(): {best(rows, method):g} voxels")


if __name__ == "__main__":
    main()
