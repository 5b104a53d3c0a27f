"""Compare inversion settings on one phantom: one JSON line per setting, then a table.

Example (GPU): PYTHONPATH=. python scripts/sweep.py --phantom four-target \
    --set '{}' --set '{"pde": "hetero"}' --noise-db -20
"""

from __future__ import annotations

import argparse
import json
import time

import jax

import helmholtz_pinn as hp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phantom", default="four-target")
    parser.add_argument("--noise-db", type=float, default=None)
    parser.add_argument("--set", action="append", default=[], help="JSON dict of overrides")
    parser.add_argument("--ahi", action="store_true", help="also run the AHI baseline")
    args = parser.parse_args()
    jax.config.update("jax_default_matmul_precision", "highest")
    t0 = time.perf_counter()
    ds = hp.simulate_phantom(args.phantom, noise_db=args.noise_db)
    print(json.dumps({"simulate_s": time.perf_counter() - t0, "device": str(jax.devices()[0])}))
    rows = []
    if args.ahi:
        for smoothing in ("none", "gaussian"):
            m = hp.evaluate(hp.baseline(ds, smoothing=smoothing, sigma=2.0), ds)
            rows.append({"set": f"AHI {smoothing}", **_short(m), "wall_s": 0.0})
            print(json.dumps(rows[-1]))
    for text in args.set or ["{}"]:
        overrides = json.loads(text)
        res = hp.invert(ds, progress=False, **overrides)
        rows.append({"set": text, **_short(res.metrics), "wall_s": res.metrics["wall_time_s"]})
        print(json.dumps(rows[-1]), flush=True)
    print("| setting | median err | R | per-region median (Pa) | contrast | wall s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['set']} | {r['err']:.3f} | {r['r']:.3f} | {r['regions']} | "
            f"{r['contrast']} | {r['wall_s']:.1f} |"
        )


def _short(m: dict) -> dict:
    regions = {k: round(v["median_storage_pa"]) for k, v in m.get("regions", {}).items()}
    contrast = {k: round(v, 2) for k, v in (m.get("contrast_transfer") or {}).items() if v}
    return {
        "err": m["median_rel_error_storage"],
        "r": m["pearson_r_storage"] or 0.0,
        "regions": regions,
        "contrast": contrast,
    }


if __name__ == "__main__":
    main()
