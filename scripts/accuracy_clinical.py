"""Accuracy on the clinical-like phantom family (helmholtz_pinn.forward.clinical).

Three steps, each its own command, because the finite-element solves need scikit-fem
(a CPU job) and the fits want a GPU:

    python scripts/accuracy_clinical.py simulate --out data/clinical            # CPU, minutes
    python scripts/accuracy_clinical.py run data/clinical --records R.jsonl     # GPU
    python scripts/accuracy_clinical.py report R.jsonl [R2.jsonl ...]           # markdown

``run`` appends one JSON line per (member, noise, method): median relative errors of G'
and G'' over the organ mask (first frequency and every frequency), Pearson R of G', the
contrast of each target (recovered over true contrast against the background, region
medians), the law the default chose and its evidence, the law check, and wall time.
Methods: ``pinn`` (the defaults, law chosen by the data), ``pinn-voigt``,
``pinn-springpot``, ``pinn-springpot-dashpot``, ``pinn-per-frequency`` (the law given),
``curl-mdev``, ``ahi`` and
``ahi-smoothed`` (the classical baselines at their default smoothing; AHI with its
default Gaussian width).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import warnings
from pathlib import Path

import study_report

pct = functools.partial(study_report.pct, missing="-")  # "-": no value to report

METHODS = (
    "pinn", "pinn-voigt", "pinn-springpot", "pinn-springpot-dashpot", "pinn-per-frequency",
    "curl-mdev", "ahi", "ahi-smoothed",
)  # fmt: skip


def simulate(args) -> int:
    """Each member clean and at every ``--noise`` level (the member's noise seed, inside
    the organ, one level for all components), as ``<member>.npz`` and
    ``<member>_<dB>dB.npz``."""
    import helmholtz_pinn as hp
    from helmholtz_pinn import lab

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.members or list(hp.CLINICAL_FAMILY):
        t0 = time.perf_counter()
        clean = hp.simulate_clinical(name)
        hp.save(clean, out / f"{name}.npz")
        for noise_db in args.noise:  # as simulate_clinical(name, noise_db=...) draws it
            noisy = lab.shared_noise(clean, noise_db, hp.CLINICAL_FAMILY[name].seed)
            hp.save(noisy, out / f"{name}_{noise_db:g}dB.npz")
        print(f"{name}: grid {clean.grid}, {clean.frequency.tolist()} Hz, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    return 0


def fit(method: str, data, overrides: dict):
    """(metrics dict, seconds) of one method on ``data``."""
    import helmholtz_pinn as hp
    from helmholtz_pinn.lab import baseline_result

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.startswith("pinn"):
            law = method.removeprefix("pinn").removeprefix("-") or "auto"
            res = hp.invert(data, progress=False, mu_model=law, **overrides)
        elif method == "ahi-smoothed":
            res = baseline_result(data, "ahi", smoothing="gaussian")
        else:
            res = baseline_result(data, method)
    return res.metrics, time.perf_counter() - t0


def record(name: str, noise_db, method: str, facts: dict, seconds: float) -> dict:
    per_f = facts.get("per_frequency") or [facts]
    checks = {c["name"]: c["passed"] for c in facts.get("fit_quality", [])}
    return {
        "member": name,
        "noise_db": noise_db,
        "method": method,
        "storage": facts.get("median_rel_error_storage"),
        "loss": facts.get("median_rel_error_loss"),
        "r": facts.get("pearson_r_storage"),
        "storage_per_f": [p.get("median_rel_error_storage") for p in per_f],
        "loss_per_f": [p.get("median_rel_error_loss") for p in per_f],
        "contrast": facts.get("contrast_transfer"),
        "contrast_loss": facts.get("contrast_transfer_loss"),
        "law": facts.get("law"),
        "law_spread": facts.get("law_spread"),
        "law_scale": facts.get("law_scale"),
        "checks_failed": [k for k, ok in checks.items() if not ok],
        "steps": facts.get("steps"),
        "final": [facts.get(f"final_{k}") for k in ("loss", "data", "pde")],
        "seconds": round(seconds, 1),
        "error": facts.get("error"),
    }


def run(args) -> int:
    import helmholtz_pinn as hp

    files = sorted(Path(args.folder).glob("*.npz"))
    if args.members:
        files = [f for f in files if f.stem.split("_")[0] in args.members]
    if args.clean:
        files = [f for f in files if "_" not in f.stem]
    overrides = json.loads(args.overrides) if args.overrides else {}
    with open(args.records, "a") as sink:
        for path in files:
            data = hp.load(path)
            name, _, noise = path.stem.partition("_")
            noise_db = float(noise.removesuffix("dB")) if noise else None
            for method in args.methods:
                try:
                    facts, seconds = fit(method, data, overrides)
                except hp.InputError as err:  # e.g. a baseline's stencil on a thin mask
                    facts, seconds = {"error": str(err)}, 0.0
                row = record(name, noise_db, method, facts, seconds)
                row["overrides"] = overrides
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                print(summary(row), flush=True)
    return 0


def contrasts(row: dict) -> str:
    """The targets' G' contrasts, then (as ``G'' k: v``) the G'' contrast of each target
    that has no G' contrast to read (a viscosity-only one)."""
    from helmholtz_pinn.lab import shown_contrasts

    storage, loss = shown_contrasts(row.get("contrast"), row.get("contrast_loss"))
    extra = [f"G'' {k}: {v:.2f}" for k, v in loss.items()]
    return " / ".join([f"{v:.2f}" for v in storage.values()] + extra)


def summary(row: dict) -> str:
    law = (row.get("law") or {}).get("mu_model", "")
    return (
        f"{row['member']:<24} {str(row['noise_db']):>5} {row['method']:<18} G' "
        f"{pct(row['storage']):>8} G'' {pct(row['loss']):>8} R "
        f"{row['r'] if row['r'] is None else round(row['r'], 3)} contrast "
        f"{contrasts(row)} {law} "
        f"spread {row.get('law_spread')} {row['seconds']} s {row['checks_failed']}"
    )


def report(args) -> int:
    rows = [json.loads(line) for p in args.records for line in Path(p).read_text().splitlines()]
    head = ("member", "noise", "method", "G'", "G''", "R", "contrast 2, 3, ..", "law", "s")
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        contrast = contrasts(r)
        law = (r.get("law") or {}).get("mu_model", "")
        spread = r.get("law_spread")
        law += f" ({spread:.3f})" if isinstance(spread, float) else ""
        noise = "clean" if r["noise_db"] is None else f"{r['noise_db']:g} dB"
        r_text = "-" if r["r"] is None else f"{r['r']:.3f}"
        print(
            f"| {r['member']} | {noise} | {r['method']} | {pct(r['storage'])} | "
            f"{pct(r['loss'])} | {r_text} | {contrast} | {law} | {r['seconds']:.0f} |"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="write the family's members as dataset .npz files")
    sim.add_argument("--out", required=True)
    sim.add_argument("--members", nargs="+")
    sim.add_argument("--noise", nargs="*", type=float, default=[-20.0], help="dB (-20)")
    go = sub.add_parser("run", help="fit every member, one JSON line per cell")
    go.add_argument("folder")
    go.add_argument("--records", required=True)
    go.add_argument("--members", nargs="+")
    go.add_argument("--clean", action="store_true", help="only the noise-free files")
    go.add_argument("--methods", nargs="+", choices=METHODS, default=["pinn"])
    go.add_argument("--overrides", help="JSON of Config overrides, e.g. '{\"steps\": 2000}'")
    rep = sub.add_parser("report", help="a markdown table of records")
    rep.add_argument("records", nargs="+")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"simulate": simulate, "run": run, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
