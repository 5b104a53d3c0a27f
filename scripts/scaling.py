"""Scaling benchmark: batched 2-D slices and one 3-D volume over 1, 2, ... D devices.

1. Slices: S synthetic plane-wave slices (n x n voxels, F frequencies, C components, one
   direction per slice) stacked as S members of one vmapped scan block (the program of
   ``invert(list_of_datasets)``; on D > 1 devices the members are split across them,
   ``placement.plan`` / ``placement.place``). Strong scaling: S from ``--members`` on every
   device count; weak scaling: S = S0 D for S0 in ``--members-per-device``. Reported:
   microseconds per step of the whole stack, and slices per second for fits of
   ``--fit-steps`` steps (S / (step time x fit steps)).
2. Volumes: one synthetic 3-D plane-wave volume of n^3 voxels on the device, a global
   batch of B points per step (``invert``'s program on one device; on D > 1 the
   data-parallel one of ``invert(volume, devices=D)``: each device draws ceil(B / D)
   points from its own shard of the voxels). Strong scaling: B from ``--volume-batch``
   on every device count; weak scaling: B = b D for b in ``--batch-per-device``.
   Reported: microseconds per step, points per second, the problem's device bytes and,
   once per volume, the seconds to evaluate the final map on every voxel
   (``predict.predict``, chunks of 65536 points).
3. Efficiency against the smallest device count n0 of ``--device-counts`` (normally 1):
   with W the work of one step (S slices, or the points of a step) and t the step time,
   speed-up = (W_D / t_D) / (W_n0 / t_n0), the throughput ratio, and efficiency =
   speed-up n0 / D. Strong (W fixed): speed-up t_n0 / t_D; weak (W = W0 D):
   efficiency t_n0 / t_D.
4. ``--agreement``: a short real fit (``--agreement-steps``, seed 0) on one device and on
   every D > 1 of the device counts, through ``invert(..., devices=D)``: S = 2 max(D)
   slices as a list (members split; each member's math unchanged) and one small volume
   in full-batch mode (batch = its voxel count, so the data-parallel math equals one
   device's up to summation order), both with the timed networks (and slice grid and
   batch). Reported: max and median over the voxels of |mu_D - mu_1| / |mu_1| (the
   final maps, Pa) and the largest relative difference of the final losses.

Each timing: one call to compile (``compile_s``, minus one steady call), then
``--blocks`` blocks of ``--sync-interval`` steps, timed with ``block_until_ready``; a
size measured once (e.g. S = 64 on 2 devices, strong and weak) is reported under both
modes. Prints one JSON line per measurement (also appended to ``--jsonl``), then
Markdown tables.

    python scripts/scaling.py --quick                   # CPU smoke run, about a minute
    python scripts/scaling.py --jsonl scaling.jsonl     # the full run (one GPU)
    python scripts/scaling.py --device-counts 1 2 --members 8 64 256 \\
        --members-per-device 32 128 --volumes 128 --volume-batch 2048 16384 65536 \\
        --batch-per-device 2048 16384 65536 --agreement    # 1 and 2 GPUs, strong and weak
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# sizes not given on the command line: FULL for a GPU, QUICK for a CPU smoke run
FULL = dict(members=(1, 8, 64, 256), members_per_device=(), slice_n=64)
FULL.update(volumes=(32, 64, 128, 256), batch_per_device=(), agreement_volume=16)
QUICK = dict(members=(1, 4, 8), members_per_device=(2,), slice_n=16)
QUICK.update(volumes=(8, 16, 24), batch_per_device=(64,), agreement_volume=8)
QUICK_NET = dict(width=32, depth=2, mu_width=16, mu_depth=1, n_features=16)
VOLUME_DIRECTIONS = [(0.48, 0.6, 0.64), (0.8, -0.6, 0.0), (0.0, 0.6, -0.8)]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add, ints = ap.add_argument, dict(type=int, nargs="+")
    add("--quick", action="store_true", help="small sizes and networks, 2 blocks of 10 steps")
    add("--device-counts", **ints, metavar="N", help="run everything on the first N devices")
    add("--devices", help="one count: N, or 'all' (1 or all devices, as suits the size); 1")
    add("--members", **ints, metavar="S", help="strong: slice counts S (1 8 64 256)")
    add("--members-per-device", **ints, metavar="S0", help="weak: S = S0 D slices (none; quick 2)")
    add("--slice-n", type=int, help="slice edge, voxels (64)")
    add("--volumes", **ints, metavar="n", help="volume edges n, n^3 voxels")
    add("--volume-batch", **ints, metavar="B", help="strong: points per volume step (--batch-size)")
    add("--batch-per-device", **ints, metavar="b", help="weak: B = b D points (none; quick 64)")
    add("--skip-slices", action="store_true")
    add("--skip-volumes", action="store_true")
    add("--agreement", action="store_true", help="fit on 1 device and on each D > 1: compare")
    add("--agreement-steps", type=int, default=300, help="steps of those fits (300)")
    add("--agreement-volume", type=int, metavar="n", help="full-batch volume edge (16; quick 8)")
    add(
        "--frequencies",
        type=float,
        nargs="+",
        default=[60.0, 80.0, 100.0],
        help="slice frequencies, Hz (volumes use the first)",
    )
    add("--components", type=int, default=2, help="slice components (volumes: 3)")
    add("--batch-size", type=int, help="points per slice per step (2048; quick 256)")
    add("--sync-interval", type=int, help="steps per block (100; quick 10)")
    add("--blocks", type=int, help="timed blocks (5; quick 2)")
    add("--fit-steps", type=int, default=10000, help="steps of one fit, for slices per second")
    add("--jsonl", type=Path, help="append the JSON lines to this file")
    args = ap.parse_args(argv)
    if args.device_counts and args.devices is not None:
        ap.error("give --device-counts or --devices, not both")
    if any(n < 1 for n in args.device_counts or []):
        ap.error(f"--device-counts must be positive; got {args.device_counts}")
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.sync_interval = args.sync_interval or (10 if args.quick else 100)
    args.blocks = args.blocks or (2 if args.quick else 5)
    args.batch_size = args.batch_size or (256 if args.quick else 2048)
    args.volume_batch = args.volume_batch or [args.batch_size]
    return args


def device_counts(args) -> list[int | None]:
    """The device counts to measure, ascending; None for ``--devices all`` (1 or all
    devices, chosen per size by ``placement.plan``)."""
    import jax

    visible = jax.device_count()
    if args.device_counts:
        too_many = [n for n in args.device_counts if n > visible]
        if too_many:
            raise SystemExit(
                f"--device-counts {too_many}: only {visible} device(s) are visible "
                f"({[str(d) for d in jax.devices()]})"
            )
        return sorted(set(args.device_counts))
    if args.devices == "all":
        return [None]
    if args.devices is not None:
        return [int(args.devices)]
    return [1, 2] if args.quick and visible >= 2 else [1]


def base_config(args):
    """The configuration of the timed programs (which call blocks directly: ``steps`` is
    the agreement fits' length) and of the agreement fits. The PDE form is "hetero" for
    slices and volumes alike (the program of docs/scaling.md's measurements; "auto"
    would pick "navier" for the 3-component volumes)."""
    import helmholtz_pinn as hp

    net = QUICK_NET if args.quick else {}
    return hp.Config(
        **net,
        batch_size=args.batch_size,
        sync_interval=args.sync_interval,
        steps=args.agreement_steps,
        learning_rate=1e-3,
        seed=0,
        mu_ref=3000.0,
        pde="hetero",
        pde_warmup=0,
    )


def plane_waves(shape, frequencies, directions, h=1e-3, g=3000.0, eta=1.0):
    """u (F, C, *shape) complex64: exp(i k d_c . x), k^2 = rho omega^2 / (g + i omega eta)."""
    import helmholtz_pinn as hp

    axes = np.meshgrid(*[np.arange(n, dtype=np.float32) * h for n in shape], indexing="ij")
    u = np.empty((len(frequencies), len(directions), *shape), np.complex64)
    for i, f in enumerate(frequencies):
        omega = 2 * np.pi * f
        k = np.sqrt(1000.0 * omega**2 / (g + 1j * omega * eta))
        for c, d in enumerate(directions):
            u[i, c] = np.exp(1j * k * sum(di * a for di, a in zip(d, axes, strict=True)))
    return hp.Dataset(u=u, frequency=np.asarray(frequencies), spacing=np.full(len(shape), h))


def slice_datasets(args, s: int) -> list:
    """S 2-D slices, slice i a plane wave at angle pi i / S (components 90 degrees apart)."""
    angles = np.linspace(0, np.pi, s, endpoint=False)
    return [
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


def volume_dataset(args, n: int):
    return plane_waves((n,) * 3, args.frequencies[:1], VOLUME_DIRECTIONS)


def timed(block, state, problem, n_blocks: int) -> tuple[float, float, object]:
    """(compile seconds, seconds per block, final state) of ``block(state, problem)``."""
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
    return max(first - per_block, 0.0), per_block, state


def with_efficiency(record: dict, base: dict | None, work: str) -> dict:
    """``record`` plus speed-up (throughput ratio) and efficiency (speed-up n0 / D) against
    ``base``, the group's record on the fewest devices n0 (itself when None)."""
    base = base or record
    ratio = (record[work] / record["us_per_step"]) / (base[work] / base["us_per_step"])
    return {
        **record,
        "baseline_devices": base["devices"],
        "speedup": ratio,
        "efficiency": ratio * base["devices"] / record["devices"],
    }


def scaled_runs(strong, weak):
    """(mode, size) of every group of measurements: the strong sizes, then the weak ones
    (per device); each group runs on every device count."""
    for mode, sizes in (("strong", strong), ("weak", weak)):
        for size in sizes:
            yield mode, size


# --- the timed programs: invert's members and layout, without its host loop ----------


def plan_for(prep, devices, members: int):
    """``placement.plan`` as ``invert`` calls it for ``prep`` (one problem, or ``members``
    stacked ones of its size); ``devices`` an int, or None for 1 or all as suits the
    size. Raises DeviceMemoryError when the problem does not fit."""
    from helmholtz_pinn import lab

    spec = prep.spec
    return lab.plan(
        devices,
        rows=int(prep.problem.count),
        per_voxel=lab.bytes_per_voxel(spec.ndim, spec.n_freq, spec.n_comp),
        batch_size=spec.batch_size,
        members=members,
    )


def placed(preps, cfg, plan):
    """(compiled block, placed state, placed problem) of ``preps`` on ``plan``, as
    ``invert`` runs them: one problem, or one member per prepared dataset, every member
    from seed 0."""
    from helmholtz_pinn import lab

    p = preps[0]
    state = lab.init_state(p.spec, 0, p.sigma_u, p.sigma_mu, cfg.learning_rate)
    problem = p.problem
    if plan.members:
        state = lab.stack_trees([state] * plan.members)
        problem = lab.stack_trees([q.problem for q in preps])
    block = lab.compile_block(p.spec, cfg.sync_interval, plan)

    def run(state, problem):
        """One block as the host loop runs it, the rate set first (the same input types:
        ``invert`` on this plan reuses the compiled program)."""
        return block(lab.set_learning_rate(state, cfg.learning_rate), problem)

    return (run, *lab.place(state, problem, plan))


# --- slices ------------------------------------------------------------------------


def bench_slices(args, counts) -> list[dict]:
    import jax

    from helmholtz_pinn import lab

    cfg = base_config(args)
    host, timings, rows = {}, {}, []

    def preps(s):
        if s not in host:
            host.clear()  # one stack at a time on the host
            datasets = slice_datasets(args, s)
            host[s] = lab.problems(datasets, cfg)
        return host[s]

    for mode, size in scaled_runs(args.members, args.members_per_device):
        group = []
        for n in counts:
            d = n or jax.device_count()
            s, devices = (size, n) if mode == "strong" else (size * d, d)
            plan = plan_for(preps(s)[0], devices, s)
            d = len(plan.devices)
            if (s, d) not in timings:
                compile_s, per_block, _ = timed(*placed(preps(s), cfg, plan), args.blocks)
                timings[s, d] = (per_block / cfg.sync_interval, compile_s)
            step_s, compile_s = timings[s, d]
            record = {
                "what": "slices",
                "mode": mode,
                "members": s,
                "members_per_device": s / d,
                "padded_members": plan.padded_members,
                "grid": [args.slice_n] * 2,
                "voxels_per_slice": args.slice_n**2,
                "batch_per_slice": cfg.batch_size,
                "devices": d,
                "us_per_step": step_s * 1e6,
                "member_steps_per_s": s / step_s,
                "slices_per_s": s / (step_s * args.fit_steps),
                "fit_steps": args.fit_steps,
                "compile_s": compile_s,
            }
            group.append(with_efficiency(record, group[0] if group else None, "members"))
            rows.append(emit(args, group[-1]))
    return rows


# --- volumes -----------------------------------------------------------------------


def time_volume(args, prep, cfg, plan) -> tuple[dict, object]:
    """Timing of one volume (``prep`` with the global batch of the step) on ``plan``;
    returns (record fields, final state on the host)."""
    from helmholtz_pinn import lab

    count, d, batch = int(prep.problem.count), len(plan.devices), prep.spec.batch_size
    local = -(-batch // d)
    full = local >= -(-count // d)  # at least a shard's rows: every voxel, every step
    block, state, problem = placed([prep], cfg, plan)
    compile_s, per_block, state = timed(block, state, problem, args.blocks)
    step_s = per_block / cfg.sync_interval
    points = count if full else local * d
    fields = {
        "devices": d,
        "batch_per_device": local,
        "points_per_step": points,
        "full_batch": full,
        "us_per_step": step_s * 1e6,
        "points_per_s": points / step_s,
        "compile_s": compile_s,
    }
    return fields, lab.gather(state, plan)


def bench_volumes(args, counts) -> list[dict]:
    import jax

    import helmholtz_pinn as hp
    from helmholtz_pinn import lab

    cfg = base_config(args)
    rows = []
    for n_edge in args.volumes:
        ds = volume_dataset(args, n_edge)
        prep = lab.prepare_one(ds, cfg)
        voxels = n_edge**3
        problem_bytes = voxels * lab.bytes_per_voxel(3, ds.n_freq, ds.n_comp)
        size = {"grid": [n_edge] * 3, "voxels": voxels, "problem_mb": problem_bytes / 2**20}
        timings, predicted = {}, False
        for mode, b in scaled_runs(args.volume_batch, args.batch_per_device):
            group = []
            for n in counts:
                d = n or jax.device_count()
                batch, devices = (b, n) if mode == "strong" else (b * d, d)
                sized = dataclasses.replace(
                    prep, spec=dataclasses.replace(prep.spec, batch_size=batch)
                )
                record = {"what": "volume", "mode": mode, **size, "batch": batch}
                try:
                    plan = plan_for(sized, devices, 0)
                except hp.DeviceMemoryError as err:
                    record.update(devices=d, error=str(err))
                    group.append(record)
                    rows.append(emit(args, record))
                    continue
                key = (batch, len(plan.devices))
                if key not in timings:
                    timings[key], state = time_volume(args, sized, cfg, plan)
                    if not predicted:
                        predicted = True
                        t = time.perf_counter()
                        lab.predict(state, prep.spec, prep.x_grid, prep.scales.omega_ratio)
                        timings[key]["predict_s"] = time.perf_counter() - t
                    del state
                record.update(timings[key])
                base = next((r for r in group if "error" not in r), None)
                group.append(with_efficiency(record, base, "points_per_step"))
                rows.append(emit(args, group[-1]))
        del prep, ds
    return rows


# --- agreement: 1 device against D -------------------------------------------------


def relative_differences(ref_mu, mu, ref_loss, loss) -> dict:
    """max and median over all voxels of |mu - ref| / |ref|; the largest relative
    difference of the final losses."""
    ref_mu = np.concatenate([np.ravel(m) for m in ref_mu])
    mu = np.concatenate([np.ravel(m) for m in mu])
    rel = np.abs(mu - ref_mu) / np.abs(ref_mu)
    ref_loss, loss = np.asarray(ref_loss, float), np.asarray(loss, float)
    return {
        "max_rel_mu": float(rel.max()),
        "median_rel_mu": float(np.median(rel)),
        "rel_loss": float(np.max(np.abs(loss - ref_loss) / np.abs(ref_loss))),
        "final_loss_1": ref_loss.tolist(),
        "final_loss_d": loss.tolist(),
    }


def agreement(args, counts) -> list[dict]:
    """A short fit on 1 device and on each D > 1 through ``invert``: slices (members split
    across the devices) and a full-batch volume (data parallel); maps and losses compared."""
    import jax

    import helmholtz_pinn as hp

    many = sorted({n or jax.device_count() for n in counts} - {1})
    if not many:
        print("agreement: skipped, only one device in the device counts", file=sys.stderr)
        return []
    rows = []

    def compare(case: str, data, cfg, **facts) -> None:
        """One record per D: ``invert(data, cfg, devices=D)`` against ``devices=1``."""

        def run(d):
            t = time.perf_counter()
            out = hp.invert(data, cfg, devices=d, progress=False)
            return (out if isinstance(out, list) else [out]), time.perf_counter() - t

        ref, ref_s = run(1)
        for d in many:
            out, wall_s = run(d)
            record = {
                "what": "agreement",
                "case": case,
                **facts,
                "batch": cfg.batch_size,
                "devices": out[0].metrics["devices"],  # = d: the devices the fit ran on
                "parallel": out[0].metrics["parallel"],
                "steps": out[0].metrics["steps"],
                "steps_1": ref[0].metrics["steps"],
                "wall_s": wall_s,
                "wall_s_1": ref_s,
                **relative_differences(
                    [r.mu for r in ref],
                    [r.mu for r in out],
                    [r.history[-1]["last_loss"] for r in ref],
                    [r.history[-1]["last_loss"] for r in out],
                ),
            }
            rows.append(emit(args, record))

    cfg, s, n_edge = base_config(args), 2 * max(many), args.agreement_volume
    compare("slices", slice_datasets(args, s), cfg, members=s, grid=[args.slice_n] * 2)
    full = cfg.replace(batch_size=n_edge**3)  # full batch: every voxel, every step
    compare("volume", volume_dataset(args, n_edge), full, grid=[n_edge] * 3)
    return rows


# --- output ------------------------------------------------------------------------


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


def table(header: list[str], lines: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in line) + " |" for line in lines] + [""]


def scaling_table(rows: list[dict], what: str, mode: str) -> list[str]:
    """Markdown: strong or weak scaling of the slices or of the volume."""
    rows = [r for r in rows if r["what"] == what and r["mode"] == mode]
    if not rows:
        return []
    strong = mode == "strong"
    bases = {r["baseline_devices"] for r in rows if "baseline_devices" in r}
    base = f"{bases.pop()} dev." if len(bases) == 1 else "fewest devices"
    if what == "slices":
        title = "Batched slices"
        size = ["S slices", "grid"] if strong else ["S0 / device", "S slices"]
        rate = f"slices / s ({rows[0]['fit_steps']}-step fits)"
    else:
        title = "One volume, data parallel"
        size = ["grid", "batch B", "points / device"] if strong else ["grid", "b / device", "B"]
        rate = "points / s"
    lines = []
    for r in rows:
        grid = "x".join(map(str, r["grid"]))
        if what == "slices":
            cells = (
                [r["members"], grid] if strong else [f"{r['members_per_device']:g}", r["members"]]
            )
        else:
            per_device = r.get("batch_per_device", "-")
            cells = [grid, r["batch"], per_device] if strong else [grid, per_device, r["batch"]]
        cells.append(r["devices"])
        if "error" in r:
            lines.append(cells + ["refused: does not fit", "-", "-", "-", "-"])
            continue
        speed = r["slices_per_s"] if what == "slices" else r["points_per_s"]
        lines.append(
            cells
            + [f"{r['us_per_step']:,.0f}", f"{speed:.3g}", f"{r['speedup']:.2f}"]
            + [f"{r['efficiency']:.0%}", f"{r['compile_s']:.1f}"]
        )
    header = [*size, "devices", "us / step", rate]
    header += ["speed-up" if strong else "throughput ratio", f"efficiency vs {base}"]
    weak = " (S = S0 D)" if what == "slices" else " (B = b D)"
    return [f"**{title}, {mode} scaling{'' if strong else weak}**", ""] + table(
        header + ["compile s"], lines
    )


def markdown(rows: list[dict]) -> str:
    out = []
    for what in ("slices", "volume"):
        out += scaling_table(rows, what, "strong") + scaling_table(rows, what, "weak")
    sizes = {tuple(r["grid"]): r for r in rows if r["what"] == "volume" and "predict_s" in r}
    if sizes:
        out += ["**Volumes: problem size, evaluation of the final map**", ""]
        out += table(
            ["grid", "voxels", "problem MB", "predict s (incl. compile)"],
            [
                ["x".join(map(str, g)), f"{r['voxels']:,}", f"{r['problem_mb']:.3g}"]
                + [f"{r['predict_s']:.2f}"]
                for g, r in sizes.items()
            ],
        )
    agree = [r for r in rows if r["what"] == "agreement"]
    if agree:
        lines = []
        for r in agree:
            if r["case"] == "slices":
                case = "slices (members)"
                size = f"{r['members']} x {r['grid'][0]}x{r['grid'][1]}, batch {r['batch']}"
            else:
                case = "volume (data parallel)"
                size = "x".join(map(str, r["grid"])) + f", full batch {r['batch']}"
            lines.append(
                [case, size, r["devices"], r["steps"], f"{r['max_rel_mu']:.2e}"]
                + [f"{r['median_rel_mu']:.2e}", f"{r['rel_loss']:.2e}"]
            )
        out += ["**Agreement of the final results, D devices against 1**", ""]
        out += table(
            ["case", "size", "devices", "steps", "max rel. diff mu"]
            + ["median rel. diff mu", "rel. diff final loss"],
            lines,
        )
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    from helmholtz_pinn import lab

    lab.initialize_distributed()
    counts = device_counts(args)
    rows = []
    if not args.skip_slices:
        rows += bench_slices(args, counts)
    if not args.skip_volumes:
        rows += bench_volumes(args, counts)
    if args.agreement:
        rows += agreement(args, counts)
    print()
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
