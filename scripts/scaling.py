"""Scaling benchmark: batched 2-D slices against S, one 3-D volume against voxel count.

1. Slices: S synthetic plane-wave slices (n x n voxels, F frequencies, C components, one
   direction per slice) stacked as S members of one vmapped scan block (the program of
   ``batch.invert_many``; with ``--devices`` > 1 the members are split across devices).
   Reported: microseconds per step of the whole stack, and slices per second for a fit
   of ``--fit-steps`` steps (S / (step time x fit steps)).
2. Volumes: one synthetic 3-D plane-wave volume of n^3 voxels, the Problem on the
   device, ``--batch-size`` points per step (``invert``'s program; with ``--devices`` > 1
   the data-parallel one of ``sharding.invert_parallel``). Reported: microseconds per
   step, the problem's device bytes, and the seconds to evaluate the final map on every
   voxel (``train.predict``, chunks of 65536 points).

Each timing: one call to compile (``compile_s``, minus one steady call), then
``--blocks`` blocks of ``--sync-interval`` steps, timed with ``block_until_ready``.
Prints one JSON line per measurement (also appended to ``--jsonl``), then Markdown tables.

    python scripts/scaling.py --quick                 # CPU smoke run, about a minute
    python scripts/scaling.py --jsonl scaling.jsonl   # the full run (one GPU)
    python scripts/scaling.py --devices all           # members / voxels over all GPUs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FULL = dict(members=(1, 8, 64, 256), slice_n=64, volumes=(32, 64, 128, 256))
QUICK = dict(members=(1, 4, 8), slice_n=16, volumes=(8, 16, 24))
QUICK_NET = dict(width=32, depth=2, mu_width=16, mu_depth=1, n_features=16)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and networks, 2 blocks of 10 steps (CPU smoke run)",
    )
    ap.add_argument("--members", type=int, nargs="+", help="slice counts S (1 8 64 256)")
    ap.add_argument("--slice-n", type=int, help="slice edge, voxels (64)")
    ap.add_argument("--volumes", type=int, nargs="+", help="volume edges n, n^3 voxels")
    ap.add_argument("--skip-slices", action="store_true")
    ap.add_argument("--skip-volumes", action="store_true")
    ap.add_argument(
        "--frequencies",
        type=float,
        nargs="+",
        default=[60.0, 80.0, 100.0],
        help="slice frequencies, Hz (volumes use the first)",
    )
    ap.add_argument("--components", type=int, default=2, help="slice components (volumes: 3)")
    ap.add_argument("--batch-size", type=int, help="points per step (2048; quick 256)")
    ap.add_argument("--sync-interval", type=int, help="steps per block (100; quick 10)")
    ap.add_argument("--blocks", type=int, help="timed blocks (5; quick 2)")
    ap.add_argument(
        "--fit-steps", type=int, default=10000, help="steps of one fit, for slices per second"
    )
    ap.add_argument("--devices", default="1", help="N or 'all' (default 1)")
    ap.add_argument("--jsonl", type=Path, help="append the JSON lines to this file")
    args = ap.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    args.members = args.members or sizes["members"]
    args.slice_n = args.slice_n or sizes["slice_n"]
    args.volumes = args.volumes or sizes["volumes"]
    args.sync_interval = args.sync_interval or (10 if args.quick else 100)
    args.blocks = args.blocks or (2 if args.quick else 5)
    args.batch_size = args.batch_size or (256 if args.quick else 2048)
    return args


def base_config(args):
    from helmholtz_pinn.config import Config

    net = QUICK_NET if args.quick else {}
    return Config(
        **net,
        batch_size=args.batch_size,
        sync_interval=args.sync_interval,
        steps=args.sync_interval,
        mu_ref=3000.0,
        pde_warmup=0,
    )


def plane_waves(shape, frequencies, directions, h=1e-3, g=3000.0, eta=1.0):
    """u (F, C, *shape) complex64: exp(i k d_c . x), k^2 = rho omega^2 / (g + i omega eta)."""
    from helmholtz_pinn.data import Dataset

    axes = np.meshgrid(*[np.arange(n, dtype=np.float32) * h for n in shape], indexing="ij")
    u = np.empty((len(frequencies), len(directions), *shape), np.complex64)
    for i, f in enumerate(frequencies):
        omega = 2 * np.pi * f
        k = np.sqrt(1000.0 * omega**2 / (g + 1j * omega * eta))
        for c, d in enumerate(directions):
            u[i, c] = np.exp(1j * k * sum(di * a for di, a in zip(d, axes, strict=True)))
    return Dataset(u=u, frequency=np.asarray(frequencies), spacing=np.full(len(shape), h))


def timed(block, state, problem, n_blocks: int) -> tuple[float, float]:
    """(compile seconds, seconds per block) of ``block(state, problem)``."""
    import jax

    t = time.perf_counter()
    state, losses = block(state, problem)
    jax.block_until_ready(losses)
    first = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(n_blocks):
        state, losses = block(state, problem)
    jax.block_until_ready((state, losses))
    per_block = (time.perf_counter() - t) / n_blocks
    return max(first - per_block, 0.0), per_block


def bench_slices(args, devices) -> list[dict]:
    import jax

    from helmholtz_pinn import batch, inversion, sharding, train

    cfg = base_config(args)
    rows = []
    for s in args.members:
        angles = np.linspace(0, np.pi, s, endpoint=False)
        datasets = [
            plane_waves(
                (args.slice_n,) * 2,
                args.frequencies,
                [
                    (np.cos(a + c * np.pi / 2), np.sin(a + c * np.pi / 2))
                    for c in range(args.components)
                ],
            )
            for a in angles
        ]
        shared = batch.shared_scales(datasets, cfg)
        preps = [inversion.prepare(d, shared, on_device=False) for d in datasets]
        spec = preps[0].spec
        state, problem = batch.stack_members(preps, cfg)
        chosen = sharding.resolve_devices(devices, members=s)
        if len(chosen) == 1:
            block = train.make_block(spec, cfg.sync_interval, "stacked")
            state, problem = jax.device_put((state, problem), chosen[0])
        else:
            mesh = sharding.make_mesh(chosen)
            state, problem, block = sharding.place_members(state, problem, spec, mesh)
        compile_s, per_block = timed(block, state, problem, args.blocks)
        step_s = per_block / cfg.sync_interval
        rows.append(
            emit(
                args,
                {
                    "what": "slices",
                    "members": s,
                    "grid": [args.slice_n] * 2,
                    "voxels_per_slice": args.slice_n**2,
                    "devices": len(chosen),
                    "us_per_step": step_s * 1e6,
                    "member_steps_per_s": s / step_s,
                    "slices_per_s": s / (step_s * args.fit_steps),
                    "fit_steps": args.fit_steps,
                    "compile_s": compile_s,
                },
            )
        )
    return rows


def bench_volumes(args, devices) -> list[dict]:
    from helmholtz_pinn import inversion, sharding, train

    cfg = base_config(args)
    directions = [(0.48, 0.6, 0.64), (0.8, -0.6, 0.0), (0.0, 0.6, -0.8)]
    rows = []
    for n in args.volumes:
        ds = plane_waves((n,) * 3, args.frequencies[:1], directions)
        voxels = n**3
        per_voxel = sharding.bytes_per_voxel(3, ds.n_freq, ds.n_comp)
        chosen = sharding.resolve_devices(
            devices, points=min(cfg.batch_size, voxels), problem_bytes=voxels * per_voxel
        )
        record = {
            "what": "volume",
            "grid": [n] * 3,
            "voxels": voxels,
            "problem_mb": voxels * per_voxel / 2**20,
            "batch_size": cfg.batch_size,
            "devices": len(chosen),
        }
        try:
            if len(chosen) == 1:
                prep = inversion.prepare(ds, cfg)
                state = train.init_state(prep.spec, 0)
                block = train.make_block(prep.spec, cfg.sync_interval)
                problem = prep.problem
            else:
                prep = inversion.prepare(ds, cfg, on_device=False)
                state, problem, block = sharding.place_data_parallel(
                    train.init_state(prep.spec, 0),
                    prep.problem,
                    prep.spec,
                    sharding.make_mesh(chosen),
                )
        except sharding.DeviceMemoryError as err:
            rows.append(emit(args, {**record, "error": str(err)}))
            continue
        compile_s, per_block = timed(block, state, problem, args.blocks)
        t = time.perf_counter()
        one = sharding.to_host(state) if len(chosen) > 1 else state
        train.predict(one, prep.spec, prep.x_grid, prep.scales.omega_ratio)
        predict_s = time.perf_counter() - t
        rows.append(
            emit(
                args,
                {
                    **record,
                    "us_per_step": per_block / cfg.sync_interval * 1e6,
                    "compile_s": compile_s,
                    "predict_s": predict_s,
                },
            )
        )
        del prep, problem, state, ds
    return rows


def emit(args, record: dict) -> dict:
    import jax

    record = {
        **record,
        "device": str(jax.devices()[0]),
        "device_count": jax.device_count(),
        "jax": jax.__version__,
        "quick": args.quick,
    }
    line = json.dumps(record)
    print(line, flush=True)
    if args.jsonl:
        with args.jsonl.open("a") as fh:
            fh.write(line + "\n")
    return record


def markdown(rows: list[dict]) -> str:
    out = []
    slices = [r for r in rows if r["what"] == "slices"]
    if slices:
        fit = slices[0]["fit_steps"]
        out += [
            f"| S slices | grid | devices | us / step | slices / s ({fit}-step fits) | compile s |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {r['members']} | {r['grid'][0]}x{r['grid'][1]} | {r['devices']} | "
            f"{r['us_per_step']:.0f} | {r['slices_per_s']:.3g} | {r['compile_s']:.1f} |"
            for r in slices
        ]
        out.append("")
    volumes = [r for r in rows if r["what"] == "volume"]
    if volumes:
        out += [
            "| voxels | grid | problem MB | devices | us / step | predict s | compile s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in volumes:
            grid = "x".join(map(str, r["grid"]))
            if "error" in r:
                out.append(
                    f"| {r['voxels']:,} | {grid} | {r['problem_mb']:.3g} | "
                    f"{r['devices']} | refused: does not fit | - | - |"
                )
            else:
                out.append(
                    f"| {r['voxels']:,} | {grid} | {r['problem_mb']:.3g} | "
                    f"{r['devices']} | {r['us_per_step']:.0f} | {r['predict_s']:.2f} "
                    f"| {r['compile_s']:.1f} |"
                )
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    from helmholtz_pinn import sharding

    sharding.initialize_distributed()
    devices = None if args.devices == "all" else int(args.devices)
    rows = []
    if not args.skip_slices:
        rows += bench_slices(args, devices)
    if not args.skip_volumes:
        rows += bench_volumes(args, devices)
    print()
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
