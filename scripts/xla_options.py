"""XLA options and scan unrolling, measured on the library's own training step.

Each variant runs in a fresh process (XLA flags are read once, at backend start) and
times scan blocks of ``--steps`` full training steps (median of ``--reps``) on three
workloads: the seed workload at N = 200 and N = 100k (``scripts/benchmark.py``) and the
library defaults on the four-target phantom (batch 2048 of its points). Losses after one
block are printed with the times, so a variant that changes the arithmetic shows it.

    python3 scripts/xla_options.py --out OUT            # all variants, JSON lines
    python3 scripts/xla_options.py --one NAME           # one variant, this process

Writes OUT/xla_options.jsonl (variant, workload, us per step, loss after the block).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# name -> (XLA_FLAGS added to the environment, scan unroll)
VARIANTS = {
    "default": ("", 1),
    "library": ("", 1),  # the library's own options (layout.compiler_options)
    "unroll2": ("", 2),
    "unroll4": ("", 4),
    "cmdbuf_while": ("--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL", 1),
    "cmdbuf_off": ("--xla_gpu_enable_command_buffer=", 1),
    "cublas_gemm": ("--xla_gpu_enable_triton_gemm=false", 1),
    "autotune4": ("--xla_gpu_autotune_level=4", 1),
}


def workloads(names):
    """name -> (spec, state, problem) for the seed workload sizes and the default fit."""
    import jax
    from benchmark import setup

    from helmholtz_pinn import phantoms, problem, train
    from helmholtz_pinn.config import Config

    out = {}
    for name in names:
        if name.startswith("seed"):
            out[name] = setup(int(name[4:]))
            continue
        cfg = Config()
        prep = problem.prepare(phantoms.simulate_phantom("four-target"), cfg)
        state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, cfg.learning_rate)
        out[name] = (prep.spec, state, jax.device_put(prep.problem))
    return out


def block(spec, steps: int, unroll: int):
    """The library's block (train.block_fn) with the scan unrolled ``unroll`` times."""
    import jax

    from helmholtz_pinn import train

    if unroll == 1:
        return train.block_fn(spec, steps)

    def run(state, prob):
        def body(s, _):
            return train.train_step(s, prob, spec)

        return jax.lax.scan(body, state, None, steps, unroll=unroll)

    return run


def one(name: str, steps: int, reps: int, sizes: list[str]) -> list[dict]:
    import jax
    import numpy as np

    from helmholtz_pinn import layout as placement

    _, unroll = VARIANTS[name]
    rows = []
    for wl, (spec, state, prob) in workloads(sizes).items():
        t0 = time.perf_counter()
        options = placement.compiler_options(spec) if name == "library" else None
        compiled = jax.jit(block(spec, steps, unroll), compiler_options=options)
        compiled = compiled.lower(state, prob).compile()
        compile_s = time.perf_counter() - t0
        s, losses = compiled(state, prob)
        first = float(np.asarray(losses)[-1, 0])
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            s, losses = compiled(s, prob)
            losses.block_until_ready()
            times.append((time.perf_counter() - t0) / steps * 1e6)
        rows.append(
            dict(
                variant=name,
                workload=wl,
                us=statistics.median(times),
                us_min=min(times),
                loss_after_block=first,
                compile_s=compile_s,
                device=jax.devices()[0].device_kind,
            )
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench_out")
    p.add_argument("--one", choices=sorted(VARIANTS))
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=sorted(VARIANTS))
    p.add_argument("--workloads", nargs="+", default=["seed200", "seed100000", "defaults"])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    if args.one:
        one(args.one, args.steps, args.reps, args.workloads)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "xla_options.jsonl", "a") as log:
        for name in args.variants:
            flags = VARIANTS[name][0]
            env = dict(os.environ)
            env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), flags]))
            if not env["XLA_FLAGS"]:
                del env["XLA_FLAGS"]
            cmd = [sys.executable, __file__, "--one", name, "--steps", str(args.steps)]
            cmd += ["--reps", str(args.reps), "--workloads", *args.workloads]
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
            if run.returncode != 0:
                lines.append(json.dumps(dict(variant=name, error=run.stderr[-600:])))
            for ln in lines:
                log.write(ln + "\n")
                print(ln, flush=True)


if __name__ == "__main__":
    main()
