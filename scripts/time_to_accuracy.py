"""Time to a map: a fit's accuracy against its steps and wall time.

    python scripts/time_to_accuracy.py run DATA.npz [...] --laws voigt springpot \\
        --stops 500 1000 2000 3000 5000 7000 10000 --records R.jsonl
    python scripts/time_to_accuracy.py run --phantom four-target --records R.jsonl
    python scripts/time_to_accuracy.py report R.jsonl

``run`` fits each dataset (with its ground truth) once per law, stopping at each step
count of ``--stops`` and continuing from the checkpoint of the previous stop: a fit's
schedule depends on its losses, not on its step budget, so the map at a stop is the
map a fit of that many steps gives. Per stop one JSON line: the steps done (an early
stop ends the curve), the fit's own training time (``time_s`` of its history, compile
excluded), the wall time of the call, the median relative error of G' and G'', Pearson
R, the contrast of each target, the law's spread (``law_spread``) and how much the map
moved since the previous stop (median |mu - mu_prev| / |mu_prev| over the mask).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _datasets(args):
    """(name, Dataset) for each file and ``--phantom``."""
    import helmholtz_pinn as hp

    for path in args.files:
        yield Path(path).stem, hp.load(path)
    for name in args.phantom or []:
        yield name, hp.simulate_phantom(name, noise_db=args.noise_db)


def _moved(mu, prev, mask) -> float | None:
    """Median over the mask and frequencies of |mu - prev| / |prev|; None at the first stop."""
    if prev is None:
        return None
    return float(np.median(np.abs(mu - prev)[:, mask] / np.abs(prev)[:, mask]))


def curve(name: str, data, law: str, stops: list[int], overrides: dict, work: Path):
    """One JSON-ready row per stop of one law on one dataset (continued by checkpoint)."""
    from helmholtz_pinn import invert

    ckpt, prev, rows = work / name / law, None, []
    for stop in stops:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = invert(
                data, progress=False, mu_model=law, steps=stop, checkpoint_dir=ckpt,
                resume=bool(rows), **overrides,
            )  # fmt: skip
        wall = time.perf_counter() - t0
        m, hist = res.metrics, res.history
        mu = np.asarray(res.mu).reshape((-1, *data.grid))
        row = {
            "data": name, "law": law, "stop": stop, "steps": m.get("steps"),
            "train_s": round(hist[-1]["time_s"], 2) if hist else None,
            "call_s": round(wall, 2), "storage": m.get("median_rel_error_storage"),
            "loss": m.get("median_rel_error_loss"), "r": m.get("pearson_r_storage"),
            "contrast": m.get("contrast_transfer"), "law_spread": m.get("law_spread"),
            "moved": _moved(mu, prev, data.mask), "final_loss": m.get("final_loss"),
            "overrides": overrides,
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
        prev = mu
        if (m.get("steps") or stop) < stop:  # stopped early: later stops add nothing
            break
    return rows


def run(args) -> int:
    overrides = json.loads(args.overrides) if args.overrides else {}
    work = Path(args.work or tempfile.mkdtemp(prefix="tta-"))
    with open(args.records, "a") as sink:
        for name, data in _datasets(args):
            for law in args.laws:
                for row in curve(name, data, law, args.stops, overrides, work):
                    sink.write(json.dumps(row) + "\n")
                sink.flush()
    return 0


def report(args) -> int:
    """A markdown table per (data, law): steps, time, G' / G'' error, R, contrast, spread."""
    rows = [json.loads(line) for path in args.records for line in open(path) if line.strip()]
    keys = sorted({(r["data"], r["law"], json.dumps(r.get("overrides", {}))) for r in rows})
    for data, law, over in keys:
        print(f"\n### {data}, {law}{'' if over == '{}' else ', ' + over}\n")
        print("| steps | train (s) | G' | G'' | R | contrast | law spread | moved |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            if (r["data"], r["law"], json.dumps(r.get("overrides", {}))) != (data, law, over):
                continue
            pct = lambda v: "" if v is None else f"{100 * v:.1f} %"  # noqa: E731
            contrast = r["contrast"] if isinstance(r["contrast"], dict) else {}
            con = " / ".join("-" if c is None else f"{c:.2f}" for c in contrast.values())
            spread = "" if r["law_spread"] is None else f"{100 * r['law_spread']:.2f} %"
            print(f"| {r['steps']} | {r['train_s']} | {pct(r['storage'])} | {pct(r['loss'])} | "
                  f"{'' if r['r'] is None else round(r['r'], 3)} | {con} | {spread} | "
                  f"{pct(r['moved'])} |")  # fmt: skip
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit and record the curves")
    r.add_argument("files", nargs="*", help="datasets (.npz) with ground truth")
    r.add_argument("--phantom", nargs="*", help="built-in phantoms (helmholtz_pinn.simulate)")
    r.add_argument("--noise-db", type=float, default=None, help="noise of --phantom (dB)")
    r.add_argument("--laws", nargs="+", default=["voigt"], help="mu_model of each curve")
    r.add_argument("--stops", nargs="+", type=int,
                   default=[500, 1000, 2000, 3000, 4000, 6000, 8000, 10000])  # fmt: skip
    r.add_argument("--overrides", help="JSON of Config fields for every fit")
    r.add_argument("--records", required=True, help="JSON lines appended here")
    r.add_argument("--work", help="checkpoint folder (default: a temporary one)")
    r.set_defaults(fn=run)
    s = sub.add_parser("report", help="markdown tables from records")
    s.add_argument("records", nargs="+")
    s.set_defaults(fn=report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
