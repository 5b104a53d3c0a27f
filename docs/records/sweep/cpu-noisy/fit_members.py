"""Fit sweep members with Config overrides on a CPU; one JSON line per fit: the sweep's
G' / G'' median errors, R and contrast, the map's median G' over the truth's per frequency
(``bias``), the fitted wave's median misfit against what the noise alone would give
(``misfit_median``, ``misfit_noise``: metrics.json's ``wave_misfit``), the final losses,
and the factor and networks that ran. From the repository root, with PYTHONPATH=.:scripts
(it reads the members from scripts/sweep.py):

    python docs/records/sweep/cpu-noisy/fit_members.py --out R.jsonl --tag T \
        --members NAME ... --set '{"sigma_factor_u": 0.1}' [--set JSON ...]
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import sweep

import helmholtz_pinn as hp


def bias(mu, data) -> list[float]:
    """Per frequency: the map's median G' over the truth's, inside the mask."""
    fit = np.asarray(mu).reshape(-1, *data.grid)
    true = np.asarray(data.mu).reshape(-1, *data.grid)
    pairs = zip(fit, true, strict=True)
    return [
        round(float(np.median(f.real[data.mask]) / np.median(t.real[data.mask])), 3)
        for f, t in pairs
    ]


def row(name, split, tag, overrides, seconds, res, data) -> dict:
    f, plan = res.metrics, res.metrics.get("plan", {})
    misfit = f.get("wave_misfit", {})
    return dict(
        member=name, split=split, tag=tag, set=overrides, seconds=round(seconds, 1),
        storage=f.get("median_rel_error_storage"), loss=f.get("median_rel_error_loss"),
        r=f.get("pearson_r_storage"), contrast=f.get("contrast_transfer"),
        bias=bias(res.mu, data), misfit_median=misfit.get("median"),
        misfit_noise=misfit.get("noise"), noise_fraction=f.get("noise_fraction"),
        final_data=f.get("final_data"), final_pde=f.get("final_pde"), steps=f.get("steps"),
        law=f.get("law"), sigma_u=f.get("sigma_u"), sigma_factor_u=f.get("sigma_factor_u"),
        sigma_factor_u_rule=plan.get("sigma_factor_u_rule"), mu_ref=f.get("mu_ref_pa"),
        networks=plan.get("networks"), lbfgs=plan.get("lbfgs_steps"),
        failed=[c["name"] for c in f.get("fit_quality", []) if not c["passed"]],
    )  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--members", nargs="+", required=True)
    p.add_argument("--set", action="append", default=[], help="JSON of Config overrides")
    p.add_argument("--out", required=True)
    p.add_argument("--data", default="data/sweep", help="the members' .npz files")
    p.add_argument("--tag", default="")
    a = p.parse_args()
    split = {m.name: m.split for m in sweep.members("full")}
    with open(a.out, "a") as sink:
        for name in a.members:
            data = hp.load(Path(a.data) / f"{name}.npz")
            for text in a.set:
                overrides = json.loads(text)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = hp.invert(data, progress=False, **overrides)
                out = row(name, split[name], a.tag, overrides, time.perf_counter() - t0, res, data)
                sink.write(json.dumps(out, default=str) + "\n")
                sink.flush()
                print(f"{name} {text} G' {out['storage']:.3f} bias {out['bias']}", flush=True)


if __name__ == "__main__":
    main()
