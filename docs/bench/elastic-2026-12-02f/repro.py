"""One default fit, one JSON line: accuracy, final losses, the fit_quality checks (data_fit
among them), wall time, XLA_FLAGS and a SHA-256 of the modulus map (bitwise comparisons
between processes). argv: spec [overrides_json]; spec is path[:crop=x0-x1-y0-y1][:db:seed]
for an elastic .npz, or scalar:<phantom>:<db>:<seed> for a built-in scalar phantom (2-D)."""

import dataclasses
import hashlib
import json
import os
import sys
import time
import warnings

import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import metrics, phantoms
from helmholtz_pinn.elastic import shared_noise

warnings.simplefilter("ignore")


def load(spec):
    parts = spec.split(":")
    if parts[0] == "scalar":
        return phantoms.simulate_phantom(parts[1], noise_db=float(parts[2]), seed=int(parts[3]))
    d, rest = hp.load(parts[0]), parts[1:]
    if rest and rest[0].startswith("crop="):
        x0, x1, y0, y1 = map(int, rest[0][5:].split("-"))
        sl = (..., slice(x0, x1), slice(y0, y1), slice(None))
        d = dataclasses.replace(
            d, u=d.u[sl], mask=d.mask[sl[1:]], mu=d.mu[sl], regions=d.regions[sl[1:]]
        )
        rest = rest[1:]
    if len(rest) == 2:
        d = shared_noise(d, float(rest[0]), int(rest[1]))
    return d


def short(e):
    return {
        "med": round(e["median_rel_error_storage"] * 100, 2),
        "R": round(e["pearson_r_storage"], 3),
        "G''": round((e.get("median_rel_error_loss") or 0) * 100, 1),
        "c": {k: round(v * 100) for k, v in e.get("contrast_transfer", {}).items()},
    }


def main():
    spec = sys.argv[1]
    over = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    d = load(spec)
    t = time.time()
    r = hp.invert(d, progress=False, **over)
    wall = round(time.time() - t, 1)
    mu = np.ascontiguousarray(np.asarray(r.mu))
    m = r.metrics
    row = {
        "spec": spec,
        "over": over,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "t": wall,
        "all": short(metrics.evaluate(mu, d)),
        **{k: m.get(k) for k in ("final_loss", "final_data", "final_pde", "sigma_factor_u")},
        "dropped": m.get("ensemble_dropped_seeds"),
        "quality": {c["name"]: [c["passed"], c["value"]] for c in m["fit_quality"]},
        "sha256_mu": hashlib.sha256(mu.tobytes()).hexdigest()[:16],
    }
    print(json.dumps(row, default=float), flush=True)


if __name__ == "__main__":
    main()
