"""Where a training step's device time goes: GPU kernels of the library's scan block,
from a ``jax.profiler`` trace, summed by kernel over one block.

For each workload of ``scripts/xla_options.py`` (``seedN``, ``defaults[B]``,
``volume[B]``) the block (``train.block_fn`` with the library's compiler options) is
compiled, run once, then run once more under the profiler. The trace's GPU kernel events
are grouped by kernel name (XLA's fusion names, cuBLAS's kernel names) and reported in
microseconds per training step, with the share of GEMM kernels and XLA's cost analysis
(FLOP and bytes of the block's HLO per step; custom-call GEMMs are not counted in it).

    python3 scripts/profile_step.py --out OUT --workloads seed100000 defaults volume
    python3 scripts/profile_step.py --out OUT --quick     # CPU smoke run (no GPU planes)

Writes OUT/profile_step.jsonl: one line per workload with the top kernels.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

GEMM = re.compile(r"gemm|xmma|cutlass|cublas|dot|sgemm|wgmma", re.IGNORECASE)


def kernel_table(trace) -> tuple[dict, float]:
    """{kernel name: [total ns, count]} over the kernel events of the GPU planes of a
    ``jax.profiler.ProfileData`` (lines named "Stream ..."), and the span in ns from the
    first kernel's start to the last kernel's end."""
    table: dict = collections.defaultdict(lambda: [0.0, 0])
    first, last = float("inf"), 0.0
    for plane in trace.planes:
        if not plane.name.startswith("/device:GPU"):
            continue
        for line in plane.lines:
            if not line.name.startswith("Stream"):
                continue
            for ev in line.events:
                table[ev.name][0] += ev.duration_ns
                table[ev.name][1] += 1
                first, last = min(first, ev.start_ns), max(last, ev.end_ns)
    return dict(table), (last - first if table else 0.0)


def profile(name: str, spec, state, prob, steps: int, precision: str | None) -> dict:
    import jax
    from jax.profiler import ProfileData

    from helmholtz_pinn.fit import placement
    from helmholtz_pinn.pinn import train

    options = placement.compiler_options(spec)
    ctx = jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()
    with ctx:
        compiled = jax.jit(train.block_fn(spec, steps), compiler_options=options)
        compiled = compiled.lower(state, prob).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    s, losses = compiled(state, prob)
    losses.block_until_ready()
    folder = tempfile.mkdtemp()
    with jax.profiler.trace(folder):
        s, losses = compiled(s, prob)
        losses.block_until_ready()
    path = glob.glob(folder + "/**/*.xplane.pb", recursive=True)[0]
    table, span = kernel_table(ProfileData.from_file(path))
    total = sum(v[0] for v in table.values())
    gemm = sum(v[0] for k, v in table.items() if GEMM.search(k))
    top = sorted(table.items(), key=lambda kv: -kv[1][0])[:25]
    return dict(
        workload=name,
        precision=precision or "highest",
        device=jax.devices()[0].device_kind,
        steps=steps,
        span_us_per_step=span / steps / 1e3,
        kernel_us_per_step=total / steps / 1e3,
        gemm_us_per_step=gemm / steps / 1e3,
        kernels_per_step=sum(v[1] for v in table.values()) / steps,
        gflop_per_step=float(cost.get("flops", 0.0)) / steps / 1e9,
        gbytes_per_step=float(cost.get("bytes accessed", 0.0)) / steps / 1e9,
        top=[
            dict(
                kernel=k[:80],
                gemm=bool(GEMM.search(k)),
                us=v[0] / steps / 1e3,
                per_step=v[1] / steps,
            )
            for k, v in top
        ],
    )


def main(argv=None) -> None:
    from xla_options import workloads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench_out")
    p.add_argument("--workloads", nargs="+", default=["seed200", "seed100000", "defaults"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--precision", default=None, help="e.g. TF32_TF32_F32_X3")
    p.add_argument("--quick", action="store_true", help="CPU smoke run: seed64, 3 steps")
    args = p.parse_args(argv)
    if args.quick:
        args.workloads, args.steps = ["seed64"], 3
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "profile_step.jsonl", "a") as log:
        for name, (spec, state, prob) in workloads(args.workloads).items():
            row = profile(name, spec, state, prob, args.steps, args.precision)
            log.write(json.dumps(row) + "\n")
            print(json.dumps({k: v for k, v in row.items() if k != "top"}), flush=True)
            for t in row["top"][:15]:
                kind = "gemm" if t["gemm"] else "other"
                print(f"  {t['us']:9.1f} us  x{t['per_step']:.0f}  {kind:5s} {t['kernel']}")


if __name__ == "__main__":
    main()
