"""Time variants of the library's training step against each other (scan blocks, one GPU).

Variants (each a fresh jit of ``train.block_fn``; the loss after the first block is
compared with the first variant's to show they compute the same thing):
  masked        jet layers as one masked expression (``model.masked_jets`` always true)
  concatenated  jet layers as rows computed apart and concatenated (always false)
  flat-adam     the library default, with Adam on one flattened parameter vector
                (``optax.flatten``)
Workloads: the seed benchmark at each N (``scripts/benchmark.py``'s setup, full batch),
and "defaults": the library's default networks and loss (hetero, Voigt, u 128 x 3,
mu 64 x 2) drawing batch 2048 from 4096 points.

    python scripts/step_variants.py                                # all, on the GPU
    python scripts/step_variants.py --sizes 64 --variants masked concatenated --reps 2
Prints one JSON line per (workload, variant): us per step (median, min), device kernels
in the compiled while body, compile s, and the relative loss differences.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import benchmark  # noqa: E402

from helmholtz_pinn import model, train  # noqa: E402

VARIANTS = ("masked", "concatenated", "flat-adam")


def _flat_adam(cfg):
    return optax.flatten(optax.inject_hyperparams(optax.adam)(learning_rate=cfg.learning_rate))


def apply_variant(name: str, saved: dict) -> None:
    """Set the library's module switches for variant ``name`` (``saved``: the defaults)."""
    forced = {"masked": True, "concatenated": False}.get(name)
    model.masked_jets = saved["masked_jets"] if forced is None else (lambda stack: forced)
    train.make_optimizer = _flat_adam if name == "flat-adam" else saved["make_optimizer"]


def workload(n):
    if n != "defaults":
        return benchmark.setup(n)
    spec, problem = benchmark.setup(4096)
    cfg = spec.cfg.replace(
        mu_width=64, mu_depth=2, pde="hetero", mu_model="voigt", batch_size=2048, pde_weight=0.1
    )
    return dataclasses.replace(spec, cfg=cfg), problem


def measure(spec, problem, steps: int, reps: int) -> tuple[dict, np.ndarray]:
    state = train.init_state(spec, 0)
    t0 = time.perf_counter()
    block = jax.jit(train.block_fn(spec, steps)).lower(state, problem).compile()
    compile_s = time.perf_counter() - t0
    state, losses = block(state, problem)
    first = np.asarray(losses)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        state, losses = block(state, problem)
        losses.block_until_ready()
        times.append((time.perf_counter() - t0) / steps * 1e6)
    ops = benchmark.count_ops(block.as_text())
    rec = dict(
        us=round(statistics.median(times), 1),
        us_min=round(min(times), 1),
        kernels=ops["kernels"],
        inventory=ops["inventory"],
        compile_s=round(compile_s, 1),
    )
    return rec, first


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["200", "1000", "4096", "10000", "100000"])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--no-defaults", action="store_true", help="skip the default-network row")
    p.add_argument("--steps", type=int, default=100, help="steps per scan block")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    saved = {"masked_jets": model.masked_jets, "make_optimizer": train.make_optimizer}
    loads = [int(n) for n in args.sizes] + ([] if args.no_defaults else ["defaults"])
    try:
        for n in loads:
            spec, problem = workload(n)
            ref = None
            for name in args.variants:
                apply_variant(name, saved)
                rec, first = measure(spec, problem, args.steps, args.reps)
                ref = first if ref is None else ref
                rel = np.abs(first[:, 0] - ref[:, 0]) / np.abs(ref[:, 0])
                rec.update(loss_rel_first=float(rel[0]), loss_rel_block=float(rel.max()))
                print(json.dumps({"n": n, "variant": name, **rec}), flush=True)
    finally:
        apply_variant("default", saved)


if __name__ == "__main__":
    main()
