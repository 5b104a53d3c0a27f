"""GPU smoke test and timing of the fused Pallas MLP-jet kernels (scripts/pallas_mlp_jet.py).

Workload: the benchmark's network, x (N, 2) uniform in [0,1]^2, 64 Fourier features
(F_in = 128, sigma 4), three 128-wide tanh layers, 2 outputs, jet order 2 (value,
gradient, Laplacian). For every N and implementation it jits
    value_and_grad(loss)(params),  loss = sum over the jet stack of out^2,
checks the stack and the weight gradients against the XLA reference (``model.apply_jet``
with Precision.HIGHEST): err = max|a - b| / max|b|, the worst over the stack and every
gradient leaf; then times it (median and min of ``--reps`` calls after warm-up, us).

Implementations: impl "xla" (apply_jet) with precision "highest" and, on the GPU,
"tf32x3" (under jax.default_matmul_precision("TF32_TF32_F32_X3")); impl "fused"
(apply_jet_fused) with precision "highest" and "tf32x3" for each block_n and num_warps.
One JSON line per measurement; a failure (e.g. a Triton lowering error) prints its first
2000 characters and moves on.

    python scripts/kernel_check.py            # on the GPU (~2-3 minutes)
    python scripts/kernel_check.py --quick    # tiny sizes, Pallas interpret mode on CPU
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pallas_mlp_jet as kernels  # noqa: E402

from helmholtz_pinn import model  # noqa: E402

SIZES = (200, 1000, 10000, 100000)
BLOCKS = (16, 32, 64)


def network(width: int, n_features: int, seed: int = 0):
    """Params and constants of the benchmark's tanh network (d = 2, depth 3, 2 outputs)."""
    net = model.FourierMLP(n_in=2, n_out=2, width=width, depth=3, n_features=n_features, sigma=4.0)
    variables = net.init(jax.random.key(seed), jnp.zeros((1, 2)))
    return variables["params"], variables["constants"]


def step_fn(apply):
    """jit(value_and_grad) of sum(out^2) w.r.t. params, also returning the jet stack."""

    def loss(params, consts, x):
        out = apply(params, consts, x)
        return jnp.sum(out**2), out

    return jax.jit(jax.value_and_grad(loss, has_aux=True))


def rel_err(a, b) -> float:
    return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))


def timed(fn, args, reps: int) -> tuple[float, float]:
    """Median and min wall time (us) of fn(*args) after three warm-up calls."""
    for _ in range(3):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times), min(times)


def measure(impl: str, apply, args, reference, reps: int, context=contextlib.nullcontext, **cfg):
    """One JSON line: errors against ``reference`` ((out, grads)) and the step time."""
    record = {"impl": impl, "n": args[2].shape[0], **cfg}
    try:
        with context():
            fn = step_fn(apply)
            t0 = time.perf_counter()
            (_, out), grads = jax.block_until_ready(fn(*args))
            record["first_call_s"] = round(time.perf_counter() - t0, 3)
            if reference is not None:
                out_ref, grads_ref = reference
                record["err_value"] = rel_err(out, out_ref)
                record["err_grad"] = max(
                    rel_err(a, b)
                    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads_ref), strict=True)
                )
            us, us_min = timed(fn, args, reps)
            record.update(us=round(us, 1), us_min=round(us_min, 1))
    except Exception as e:  # noqa: BLE001 - report and continue with the next measurement
        record["error"] = f"{type(e).__name__}: {e}"[:2000]
        record["traceback_tail"] = traceback.format_exc()[-1000:]
    print(json.dumps(record), flush=True)
    return record


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CPU, interpret)")
    parser.add_argument("--sizes", type=int, nargs="*", help=f"N values (default {SIZES})")
    parser.add_argument("--blocks", type=int, nargs="*", help=f"block_n (default {BLOCKS})")
    parser.add_argument("--warps", type=int, nargs="*", default=[4], help="num_warps (4)")
    parser.add_argument("--reps", type=int, default=None, help="timed calls (default 20)")
    parser.add_argument(
        "--precisions",
        nargs="*",
        default=["highest", "tf32x3"],
        choices=sorted(kernels.PRECISIONS),
        help="fused-kernel precisions (both)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    sizes = args.sizes or ((50,) if quick else SIZES)
    blocks = args.blocks or ((16, 32) if quick else BLOCKS)
    reps = args.reps or (3 if quick else 20)
    warps = args.warps
    width, n_features = (32, 16) if quick else (128, 64)
    device = jax.devices()[0]
    print(
        json.dumps(
            {
                "device": device.device_kind,
                "backend": jax.default_backend(),
                "jax": jax.__version__,
                "interpret": jax.default_backend() != "gpu",
                "width": width,
                "f_in": 2 * n_features,
            }
        ),
        flush=True,
    )
    params, consts = network(width, n_features)
    order, activation = 2, "tanh"

    def xla(p, c, x):
        return model.apply_jet(p, c, x, activation, order)

    for n in sizes:
        x = jax.random.uniform(jax.random.key(n), (n, 2))
        step_args = (params, consts, x)
        try:
            (_, out_ref), grads_ref = jax.block_until_ready(step_fn(xla)(*step_args))
            reference = (out_ref, grads_ref)
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"impl": "reference", "n": n, "error": str(e)[:2000]}), flush=True)
            reference = None
        measure("xla", xla, step_args, reference, reps, precision="highest")
        if jax.default_backend() == "gpu":  # the CPU has no TF32 dot
            measure(
                "xla",
                xla,
                step_args,
                reference,
                reps,
                context=lambda: jax.default_matmul_precision("TF32_TF32_F32_X3"),
                precision="tf32x3",
            )
        for precision, block_n, num_warps in itertools.product(args.precisions, blocks, warps):

            def fused(p, c, x, precision=precision, block_n=block_n, num_warps=num_warps):
                return kernels.apply_jet_fused(
                    p,
                    c,
                    x,
                    activation,
                    order,
                    precision=precision,
                    block_n=block_n,
                    num_warps=num_warps,
                )

            measure(
                "fused",
                fused,
                step_args,
                reference,
                reps,
                precision=precision,
                block_n=block_n,
                num_warps=num_warps,
            )


if __name__ == "__main__":
    main()
