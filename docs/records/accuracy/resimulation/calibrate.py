"""Data note: how calibration.jsonl was made (the `resimulation` fit check on maps of known
error; no fits). Run from the repository root with the sweep's held-out members in D:

    python docs/records/accuracy/resimulation/calibrate.py D calibration.jsonl

Each member (and its -20 / -10 dB copies, its through-plane component alone, its middle
slice) is scored with maps of known G' error: the truth, the truth scaled, blurred, with
15 % voxel noise, fading to 0.2 over the far 40 % of x, and the other classical map. One
JSON line per (variant, map): G' error, misfits, the check's value and verdict, seconds.
"""

import dataclasses
import glob
import json
import sys
import time

import numpy as np
import scipy.ndimage as ndi

from helmholtz_pinn.assess import baselines, fit_checks, resimulation
from helmholtz_pinn.forward.elastic import shared_noise
from helmholtz_pinn.forward.phantoms import add_noise
from helmholtz_pinn.io.dataset import load


def g_error(mu, d) -> float:
    truth = np.broadcast_to(np.asarray(d.mu).reshape(-1, *d.grid), (d.n_freq, *d.grid))
    pred = np.broadcast_to(np.asarray(mu).reshape(-1, *d.grid), (d.n_freq, *d.grid))
    m = d.mask & np.isfinite(pred).all(0)
    return float(np.median(np.abs(pred.real - truth.real)[:, m] / np.abs(truth.real)[:, m]))


def blur(mu, mask, sigma):
    den = ndi.gaussian_filter(mask.astype(float), sigma)
    parts = [
        ndi.gaussian_filter(np.where(mask, p, 0), (0, *[sigma] * mask.ndim))
        for p in (mu.real, mu.imag)
    ]
    return (parts[0] + 1j * parts[1]) / np.maximum(den, 1e-9)


def maps(d, truth, rng):
    out = {"true": truth}
    out |= {f"x{s}": s * truth for s in (0.6, 0.7, 0.85, 0.92, 0.95, 1.08, 1.15)}
    out |= {"blur1": blur(truth, d.mask, 1.0), "blur2": blur(truth, d.mask, 2.0)}
    out["vox15"] = truth * (1 + 0.15 * rng.standard_normal(d.grid))
    x = np.linspace(0, 1, d.grid[0]).reshape(-1, *[1] * (d.ndim - 1))
    out["fade"] = truth * np.clip(1 - (x - 0.6) / 0.4 * 0.8, 0.2, 1)
    out["AHI"] = baselines.ahi(d, smoothing="gaussian", per_frequency=True)
    if d.n_comp == 3 and d.ndim == 3:
        try:
            out["curl-MDEV"] = baselines.curl_mdev(d, per_frequency=True)
        except ValueError:
            pass
    return out


def variants(path):
    d, name = load(path), path.split("/")[-1][: -len(".npz")]
    if d.ndim == 3 and d.grid[-1] > 40:  # the 48-slice stack: its middle 10 slices
        cut = slice(19, 29)
        d = dataclasses.replace(
            d,
            u=d.u[..., cut],
            mu=d.mu[..., cut],
            mask=d.mask[..., cut],
            regions=d.regions[..., cut],
        )
        name += "[19:29]"
    yield name, d
    if "clean" in name:
        for db in (-20, -10):
            noisy = (
                shared_noise(d, db, seed=7)
                if d.n_comp == 3
                else dataclasses.replace(d, u=add_noise(d.u, db, seed=7))
            )
            yield f"{name}+{-db}dB", noisy
    if d.n_comp == 3 and d.ndim == 3:
        yield name + " z only", dataclasses.replace(d, u=d.u[:, 2:3])
        k = d.grid[2] // 2
        cut = (..., k)
        yield (
            name + " middle slice",
            dataclasses.replace(
                d,
                u=d.u[cut],
                mu=d.mu[cut],
                mask=d.mask[cut],
                regions=d.regions[cut],
                spacing=d.spacing[:2],
            ),
        )


def main(folder: str, out_path: str) -> None:
    with open(out_path, "w") as out:
        for path in sorted(glob.glob(f"{folder}/*.npz")):
            for name, d in variants(path):
                truth = np.broadcast_to(np.asarray(d.mu).reshape(-1, *d.grid), (d.n_freq, *d.grid))
                t0 = time.process_time()
                facts = fit_checks.resimulation_facts(d, truth)  # what every PINN result runs
                seconds = time.process_time() - t0
                for label, mu in maps(d, truth, np.random.default_rng(0)).items():
                    if label == facts["baseline"]:
                        continue
                    mine = (
                        facts
                        if label == "true"
                        else {**facts, "misfit": resimulation.misfit(mu, d).round(5).tolist()}
                    )
                    check = fit_checks.fit_quality(
                        mu, d.mask, None, resimulation=mine, checks=("resimulation",)
                    )[0]
                    rec = dict(
                        member=name,
                        grid=list(d.grid),
                        components=d.n_comp,
                        map=label,
                        g_error=round(g_error(mu, d), 4),
                        misfit=mine["misfit"],
                        baseline=facts["baseline"],
                        baseline_misfit=facts["baseline_misfit"],
                        noise=facts["noise"],
                        value=None if check["value"] is None else round(check["value"], 3),
                        fired=not check["passed"],
                        check_cpu_s=round(seconds, 2),
                    )
                    out.write(json.dumps(rec) + "\n")
                    out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
