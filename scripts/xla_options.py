"""XLA options, scan unrolling and matmul precision, measured on the library's own
training step.

Each variant runs in a fresh process (XLA flags are read once, at backend start) and
times scan blocks of ``--steps`` full training steps (median of ``--reps``) on the
workloads: the seed workload at N points (``seedN``, ``scripts/benchmark.py``), the
library defaults on the four-target phantom (``defaults``: batch 2048 of its 8000
points; ``defaultsB``: batch B) and the 3-D default fit's program on an 80 x 100 x 10
three-component volume (``volume``: the 3-D default batch; ``volumeB``: batch B).
Losses after one block are printed with the times, so a variant that changes the
arithmetic shows it. Variants: XLA
flags and unrolling (against "default"), and, with the library's compiler options
(against "library"): ``x3_xla`` = the float32 program traced under
``jax.default_matmul_precision("TF32_TF32_F32_X3")`` (XLA's own 3-pass TF32 algorithm; a
GPU only: the CPU refuses it), ``x6_xla`` (6-pass bfloat16, ``BF16_BF16_F32_X6``),
``x3_cublas`` / ``x6_cublas`` (the same with cuBLAS GEMMs) and ``autotune0_library``
(no GEMM autotuning: compile time against step time).

    python3 scripts/xla_options.py --out OUT            # all variants, JSON lines
    python3 scripts/xla_options.py --one NAME           # one variant, this process
    python3 scripts/xla_options.py --out OUT --quick    # CPU smoke run: tiny sizes

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
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


class Variant(NamedTuple):
    """XLA_FLAGS added to the environment, scan unroll, whether the library's compiler
    options (layout.compiler_options) apply and the ``jax.default_matmul_precision``
    the block is traced under."""

    flags: str = ""
    unroll: int = 1
    library: bool = False
    precision: str | None = None


VARIANTS = {
    "default": Variant(),
    "library": Variant(library=True),
    "unroll2": Variant(unroll=2),
    "unroll4": Variant(unroll=4),
    "cmdbuf_while": Variant("--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL"),
    "cmdbuf_off": Variant("--xla_gpu_enable_command_buffer="),
    "cublas_gemm": Variant("--xla_gpu_enable_triton_gemm=false"),
    "autotune4": Variant("--xla_gpu_autotune_level=4"),
    "autotune0_library": Variant("--xla_gpu_autotune_level=0", library=True),
    "x3_xla": Variant(library=True, precision="TF32_TF32_F32_X3"),
    "x3_cublas": Variant("--xla_gpu_enable_triton_gemm=false", precision="TF32_TF32_F32_X3"),
    "x6_xla": Variant(library=True, precision="BF16_BF16_F32_X6"),
    "x6_cublas": Variant("--xla_gpu_enable_triton_gemm=false", precision="BF16_BF16_F32_X6"),
}
WORKLOADS = ["seed200", "seed100000", "defaults", "volume"]
QUICK = dict(workloads=["seed64", "defaults256", "volume256"], steps=5, reps=2)  # --quick


def workloads(names):
    """name -> (spec, state, problem) for the seed workload sizes (``seedN``) and the
    default fit (``defaults``, or ``defaultsB`` at batch B) and the 3-D default fit
    (``volume``, ``volumeB``)."""
    import jax
    from benchmark import setup

    from helmholtz_pinn.config import Config
    from helmholtz_pinn.fit import plan
    from helmholtz_pinn.forward import phantoms
    from helmholtz_pinn.pinn import train

    out = {}
    for name in names:
        if name.startswith("seed"):
            out[name] = setup(int(name[4:]))
            continue
        if name.startswith("volume"):  # one 3-D navier fit of an 80 x 100 x 10 volume
            out[name] = _volume(int(name[len("volume") :] or plan.BATCH_SIZE[3]))
            continue
        batch = int(name[len("defaults") :] or plan.BATCH_SIZE[2])
        cfg = Config(batch_size=batch)
        prep = plan.prepare_one(phantoms.simulate_phantom("four-target"), cfg)
        state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, cfg.learning_rate)
        out[name] = (prep.spec, state, jax.device_put(prep.problem))
    return out


def _volume(batch: int):
    """The 3-D default fit's program (navier, u 512 x 3, 256 frequencies) on a random
    three-component 80 x 100 x 10 volume at 60/80/100 Hz: only the shapes matter here."""
    import jax

    from helmholtz_pinn.config import Config
    from helmholtz_pinn.fit import plan
    from helmholtz_pinn.io.dataset import Dataset
    from helmholtz_pinn.pinn import train

    rng = np.random.default_rng(0)
    shape = (3, 3, 80, 100, 10)
    u = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    data = Dataset(u=u, frequency=np.array([60.0, 80.0, 100.0]), spacing=np.full(3, 1e-3))
    cfg = Config(batch_size=batch, mu_ref=3000.0)
    prep = plan.prepare_one(data, cfg)
    state = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, cfg.learning_rate)
    return prep.spec, state, jax.device_put(prep.problem)


def block(spec, steps: int, unroll: int):
    """The library's block (train.block_fn) with the scan unrolled ``unroll`` times."""
    import jax

    from helmholtz_pinn.pinn import train

    if unroll == 1:
        return train.block_fn(spec, steps)

    def run(state, prob):
        def body(s, _):
            return train.train_step(s, prob, spec)

        return jax.lax.scan(body, state, None, steps, unroll=unroll)

    return run


def one(name: str, steps: int, reps: int, sizes: list[str]) -> list[dict]:
    import contextlib

    import jax

    from helmholtz_pinn.fit import placement

    variant = VARIANTS[name]
    prec = variant.precision
    rows = []
    for wl, (spec, state, prob) in workloads(sizes).items():
        t0 = time.perf_counter()
        options = placement.compiler_options(spec) if variant.library else None
        compiled = jax.jit(block(spec, steps, variant.unroll), compiler_options=options)
        try:  # an algorithm the backend lacks (x3_xla on a CPU): say so and go on
            with jax.default_matmul_precision(prec) if prec else contextlib.nullcontext():
                compiled = compiled.lower(state, prob).compile()
        except Exception as e:
            rows.append(dict(variant=name, workload=wl, error=repr(e)[:300]))
            print(json.dumps(rows[-1]), flush=True)
            continue
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
                batch=spec.batch_size,
                precision=prec or str(jax.config.jax_default_matmul_precision),
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
    p.add_argument("--workloads", nargs="+", default=WORKLOADS)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--quick", action="store_true", help=f"CPU smoke run: {QUICK}")
    args = p.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    if args.one:
        one(args.one, args.steps, args.reps, args.workloads)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "xla_options.jsonl", "a") as log:
        for name in args.variants:
            flags = VARIANTS[name].flags
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
