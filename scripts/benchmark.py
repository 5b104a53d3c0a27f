"""Seed-workload benchmark of the library's own training step (JAX side).

Workload (docs/performance.md, shared benchmark spec): N points x in [0,1]^2, u_obs =
sin(4 x0) + i cos(3 x1), F = C = 1, two 128-wide depth-3 tanh Fourier-feature networks
(64 features, sigma 4), the library's per-frequency mu, Adam lr 1e-3. That mu is
softplus(o0 + c) + 0.1 i softplus(o1 + c) (G'' >= 0), on both sides; the spec's 0.1 i o1
costs the same.

Loss mapping: the spec's loss is mean|u - u_obs|^2 + 1e-3 mean|mu Lap u + k u|^2; the
library's residual is normalised, r = mu Lap u / kappa + u, so with kappa = k
    mean|mu Lap u + k u|^2 = k^2 mean|r|^2   =>   pde_weight = 1e-3 k^2 (about 24.94).

Writes one JSON line per measurement (impl, what, n, us, us_min, config) to stdout and to
OUT/jax.jsonl, and the initial weights and losses to OUT/weights.npz for the PyTorch side.
``--report OUT`` prints the Markdown tables of both sides.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

K_WAVE = (2 * np.pi) ** 2 * 4  # k of the spec's residual mu Lap u + k u
SPEC_PDE_WEIGHT = 1e-3
PDE_WEIGHT = SPEC_PDE_WEIGHT * K_WAVE**2  # the library's pde_weight (see module docstring)
SIZES = (200, 1000, 10000, 100000)
SCAN_STEPS = 100
PRECISIONS = ("highest", "tensorfloat32", "TF32_TF32_F32_X3")


def workload(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points x (n, 2) float32 in [0,1]^2 and u_obs (n,) complex64 (never zeros)."""
    x = np.random.default_rng(seed).random((n, 2), dtype=np.float32)
    u = np.sin(4 * x[:, 0]) + 1j * np.cos(3 * x[:, 1])
    return x, u.astype(np.complex64)


# the seed workload's configuration; batch_size = N (every point, every step)
SEED_CONFIG = dict(width=128, depth=3, mu_width=128, mu_depth=3, n_features=64, activation="tanh")
SEED_CONFIG.update(sigma_u=4.0, sigma_mu=4.0, mu_model="per-frequency", pde="helmholtz")
SEED_CONFIG.update(pde_weight=PDE_WEIGHT, pde_warmup=0, learning_rate=1e-3)


def setup(n: int, **overrides):
    """The library's Spec, initial state (seed 0) and Problem for the seed workload on n
    points (device arrays); ``overrides`` change SEED_CONFIG's fields."""
    import jax

    import helmholtz_pinn as hp
    from helmholtz_pinn import lab

    cfg = hp.Config(**{**SEED_CONFIG, **overrides}, batch_size=n)
    spec = lab.program(cfg, 2, 1, 1)
    state = lab.init_state(spec, 0, cfg.sigma_u, cfg.sigma_mu, cfg.learning_rate)
    x, u = workload(n)
    one = np.ones((1, 1), np.float32)
    problem = lab.Problem(
        x,
        u[:, None, None],
        np.array([K_WAVE], np.float32),
        one[0],
        np.int32(n),
        one,
        one,
        np.ones(n, np.float32),
    )
    return spec, state, jax.device_put(problem)


def seed_loss(params, state, spec, problem):
    """The library's loss on every point, (loss, data, pde), with the seed's pde_weight."""
    import jax.numpy as jnp

    from helmholtz_pinn import lab

    every = jnp.ones(problem.x.shape[0], jnp.float32)
    batch = (problem.x, problem.u, every, every)
    data, pde = lab.loss_terms(params, state.consts, spec, problem, batch)
    return jnp.stack([data + PDE_WEIGHT * pde, data, pde])


def layout(name: str):
    """Force evaluate_fields' network layout ("stacked"/"separate"; "auto" = library)."""
    from helmholtz_pinn import lab

    return lab.network_layout(name)


def auto_layout(n: int) -> str:
    from helmholtz_pinn import lab

    return "stacked" if lab.stacks_points(n) else "separate"


def compile_block(spec, state, problem, steps: int):
    """(compiled scan block, seconds to trace, lower and compile): a fresh jit, no reuse."""
    import jax

    from helmholtz_pinn import lab

    t0 = time.perf_counter()
    options = lab.compiler_options(spec)  # the library's GEMM choice by batch size
    compiled = jax.jit(lab.block_fn(spec, steps), compiler_options=options)
    compiled = compiled.lower(state, problem).compile()
    return compiled, time.perf_counter() - t0


def count_ops(hlo: str) -> dict:
    """HLO instructions, fusions and kernels (launching instructions) in the while body."""
    comps, name = {}, None
    for line in hlo.splitlines():
        head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if head:
            name = head.group(1)
            comps[name] = []
        elif line.startswith("}"):
            name = None
        elif name and " = " in line:
            comps[name].append(line)
    body = next(
        (
            re.search(r"body=%?([\w.\-]+)", ln).group(1)
            for lines in comps.values()
            for ln in lines
            if re.search(r" while\(", ln)
        ),
        None,
    )
    counts = {"hlo_instructions": 0, "fusions": 0, "kernels": 0, "inventory": {}}
    free = {"parameter", "get-tuple-element", "tuple", "bitcast", "constant", "call"}

    def visit(comp):
        for ln in comps.get(comp, []):
            op = _opcode(ln)
            counts["hlo_instructions"] += 1
            counts["fusions"] += op == "fusion"
            counts["kernels"] += op not in free
            if op not in free:
                kind = _kernel_kind(op, ln)
                counts["inventory"][kind] = counts["inventory"].get(kind, 0) + 1
            if op == "call":
                visit(re.search(r"to_apply=%?([\w.\-]+)", ln).group(1))

    if body:
        visit(body)
    return counts


def _kernel_kind(op: str, line: str) -> str:
    """A launching instruction's kind: "fusion:kLoop", "fusion:__triton_gemm",
    "custom-call:__cublas$gemm", "copy", ... (fusion kind, or backend kind when set)."""
    if op in ("fusion", "custom-call"):
        backend = re.search(r'"kind":"([\w$.]+)"', line)
        target = re.search(r'(?:kind=|custom_call_target=")([\w$.]+)', line)
        label = backend or target
        return f"{op}:{label.group(1)}" if label else op
    return op


def _opcode(line: str) -> str:
    rest = line.split(" = ", 1)[1]
    if rest.startswith("("):  # tuple shape: skip the balanced parentheses
        depth = 0
        for i, ch in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                rest = rest[i + 1 :]
                break
    else:
        rest = rest.split(" ", 1)[1]
    return rest.strip().split("(", 1)[0]


def memory_bytes(compiled) -> int | None:
    """Device bytes an executable needs: arguments + outputs + temporaries - aliased."""
    m = compiled.memory_analysis()
    if m is None:
        return None
    return int(
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        + m.temp_size_in_bytes
        - m.alias_size_in_bytes
    )


def repeat(fn, reps: int, per_call: int) -> tuple[float, float]:
    """Median and min microseconds per step over ``reps`` timed calls of ``fn``."""
    fn()  # warm-up (compile, autotune, allocate)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) / per_call * 1e6)
    return statistics.median(times), min(times)


class Recorder:
    """Prints JSON lines and appends them to a file (a new run of a script adds to the
    file; delete it to start afresh)."""

    def __init__(self, path: Path, impl: str, device: str):
        self.path, self.impl, self.device = path, impl, device
        path.touch()

    def __call__(self, what: str, n: int, us=None, us_min=None, **config):
        rec = {
            "impl": self.impl,
            "what": what,
            "n": n,
            "us": us,
            "us_min": us_min,
            "config": {"device": self.device, **config},
        }
        line = json.dumps(rec)
        print(line, flush=True)
        with self.path.open("a") as f:
            f.write(line + "\n")


def laplacian_error(params, consts, precision: str | None, n: int = 2000) -> float:
    """||Lap u - Lap u_f64|| / ||Lap u_f64|| of the u-network at n points; the reference
    is float64 on the CPU, the tested value float32 on the default device."""
    import jax

    from helmholtz_pinn import lab

    x, _ = workload(n, seed=1)

    def lap(p, c, pts):
        return lab.apply_jet(p, c, pts, "tanh", lab.LAP, SEED_CONFIG["depth"])[3, :, :]

    ctx = jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()
    with ctx:
        got = np.asarray(jax.jit(lap)(params, consts, x), np.float64)
    cpu = jax.devices("cpu")[0]
    with jax.enable_x64(True):
        to64 = jax.tree.map(
            lambda a: jax.device_put(np.asarray(a, np.float64), cpu), (params, consts, x)
        )
        ref = np.asarray(jax.jit(lap)(*to64))
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def run_jax(args) -> None:
    import jax

    import helmholtz_pinn as hp
    from helmholtz_pinn import lab

    out = Path(args.out)
    cache = Path(args.cache_dir or out / "jax_cache")
    shutil.rmtree(cache, ignore_errors=True)
    hp.enable_compilation_cache(cache)  # empty: the first compile of each block is cold
    dev = jax.devices()[0]
    rec = Recorder(out / "jax.jsonl", "jax", f"{dev.platform}:{dev.device_kind}")
    rec("versions", 0, jax=jax.__version__, matmul_precision=str(lab.matmul_precision()))
    saved = {}
    for n in args.sizes:
        saved.update(bench_size(args, rec, n))
        np.savez(out / "weights.npz", **saved)  # after each size: the PyTorch side's input
    stats = dev.memory_stats() or {}
    rec("memory_process_peak", 0, bytes=stats.get("peak_bytes_in_use"))


def bench_size(args, rec, n: int) -> dict:
    """All JAX measurements at n points; returns the weights and the initial loss."""
    import jax

    from helmholtz_pinn import lab

    spec, state, problem = setup(n)
    saved = {
        f"{net}/{k}": np.asarray(v)
        for net in ("u", "mu")
        for k, v in {**state.params[net], **state.consts[net]}.items()
    }
    loss = jax.jit(seed_loss, static_argnums=2)(state.params, state, spec, problem)
    saved[f"loss/{n}"] = loss = np.asarray(loss)
    rec("loss", n, loss=float(loss[0]), data=float(loss[1]), pde=float(loss[2]))

    depth = SEED_CONFIG["depth"]
    fwd = jax.jit(lambda p, c, x: lab.apply_jet(p, c, x, "tanh", lab.VALUE, depth))
    pu, cu = state.params["u"], state.consts["u"]
    med, lo = repeat(
        lambda: jax.block_until_ready([fwd(pu, cu, problem.x) for _ in range(100)]), args.reps, 100
    )
    rec("forward", n, med, lo)
    live = {"state": state}

    def time_block(compiled, **config):
        live["state"] = state

        def block():
            live["state"], losses = compiled(live["state"], problem)
            live["losses"] = losses.block_until_ready()

        med, lo = repeat(block, args.reps, args.scan_steps)
        assert np.all(np.isfinite(np.asarray(live["losses"]))), "non-finite loss"
        rec("scan_step", n, med, lo, K=args.scan_steps, **config)

    for name in ["stacked", "separate"] if n <= args.max_stacked else ["separate"]:
        auto = name == auto_layout(n)
        with layout(name):
            compiled, cold = compile_block(spec, state, problem, args.scan_steps)
            rec("compile", n, cold * 1e6, layout=name, cache="cold", auto=auto)
            if auto:
                jax.clear_caches()
                _, warm = compile_block(spec, state, problem, args.scan_steps)
                rec("compile", n, warm * 1e6, layout=name, cache="warm", auto=True)
        hlo = compiled.as_text()
        if args.hlo_dir:
            Path(args.hlo_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.hlo_dir) / f"block_{n}_{name}.hlo.txt").write_text(hlo)
        rec("ops", n, layout=name, auto=auto, **count_ops(hlo))
        rec("memory", n, layout=name, auto=auto, bytes=memory_bytes(compiled))
        time_block(compiled, layout=name, auto=auto, precision="highest")

    step = jax.jit(lab.train_step, static_argnums=2)

    def dispatch():
        for _ in range(args.dispatch_steps):
            live["state"], loss = step(live["state"], problem, spec)
            float(loss[0])  # what users write: read the loss every step

    med, lo = repeat(dispatch, args.reps, args.dispatch_steps)
    rec("step_dispatch", n, med, lo, layout=auto_layout(n))

    if n in args.precision_sizes:
        for prec in args.precisions:
            try:  # an algorithm the backend lacks: say so and go on
                if prec == "highest":
                    rec("lap_error", n, precision=prec, rel_error=laplacian_error(pu, cu, None))
                    continue
                err = laplacian_error(pu, cu, prec)
                with jax.default_matmul_precision(prec):
                    compiled, _ = compile_block(spec, state, problem, args.scan_steps)
                time_block(
                    compiled, layout=auto_layout(n), auto=False, precision=prec, lap_rel_error=err
                )
            except Exception as e:
                rec("scan_step", n, precision=prec, error=repr(e)[:300])
    if n == max(args.sizes):
        breakdown(rec, spec, state, problem, args.reps)
    return saved


def breakdown(rec, spec, state, problem, reps: int) -> None:
    """Where a step's time goes: forward jets, loss + gradient, and the bare matmul rate."""
    import jax
    import jax.numpy as jnp

    from helmholtz_pinn import lab

    n = problem.x.shape[0]
    fields = jax.jit(
        lambda p: lab.evaluate_fields(p, state.consts, spec, problem.x, problem.omega_ratio).lap_u
    )

    def loss(p):
        return seed_loss(p, state, spec, problem)[0]

    grad = jax.jit(jax.value_and_grad(loss))
    for what, fn in (("fields_forward", fields), ("loss_and_grad", grad)):
        med, lo = repeat(
            lambda fn=fn: jax.block_until_ready([fn(state.params) for _ in range(10)]), reps, 10
        )
        rec(what, n, med, lo)
    a = jnp.asarray(np.random.default_rng(2).standard_normal((4 * n, 128), np.float32))
    w = jnp.asarray(np.random.default_rng(3).standard_normal((128, 128), np.float32))
    mm = jax.jit(lambda a, w: jnp.dot(a, w, precision=jax.lax.Precision.HIGHEST))
    med, lo = repeat(lambda: jax.block_until_ready([mm(a, w) for _ in range(10)]), reps, 10)
    rec("gemm_4n_128_128", n, med, lo, tflops=2 * 4 * n * 128 * 128 / (lo * 1e-6) / 1e12)


# ----- report -------------------------------------------------------------------------


def _load(out: Path) -> list[dict]:
    recs = []
    for name in ("jax.jsonl", "torch.jsonl"):
        if (out / name).exists():
            recs += [json.loads(ln) for ln in (out / name).read_text().splitlines() if ln]
    return recs


def _fmt(us) -> str:
    if us is None:
        return "-"
    return f"{us:,.0f}".replace(",", " ") if us >= 100 else f"{us:.1f}"


def _inventory(kinds: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))


DEFAULT_ROW = "JAX scan(K), library default layout"


def report(out: Path) -> str:
    recs = _load(out)
    sizes = sorted({r["n"] for r in recs if r["what"] == "scan_step"})
    where = recs[0]["config"]["device"] if recs else "?"
    rows = {}  # label -> {n: record}

    def add(label, r):
        rows.setdefault(label, {})[r["n"]] = r

    for r in recs:
        c, w = r["config"], r["what"]
        if r["us"] is None:
            continue
        if r["impl"] == "jax" and w == "scan_step" and c.get("precision") == "highest":
            if c["layout"] == auto_layout(r["n"]):  # the library's current threshold
                add(DEFAULT_ROW, r)
            add(f"JAX scan({c['K']}), {c['layout']} layout", r)
        elif r["impl"] == "jax" and w in ("step_dispatch", "forward"):
            add(
                {
                    "step_dispatch": "JAX jit step per call, loss read each step",
                    "forward": "JAX forward, u-net",
                }[w],
                r,
            )
        elif r["impl"] == "pytorch" and w != "loss_check":
            add(f"PyTorch {w}", r)
    head = "| implementation | " + " | ".join(f"N={n}" for n in sizes) + " |"
    sep = "|---" * (len(sizes) + 1) + "|"
    lines = [
        f"Device: {where}. Median us per step (forward: per call); min in JSON.",
        "",
        head,
        sep,
    ]
    for label, by_n in rows.items():
        lines.append(
            f"| {label} | " + " | ".join(_fmt(by_n.get(n, {}).get("us")) for n in sizes) + " |"
        )
    jax_best = rows.get(DEFAULT_ROW, {})
    lines += ["", "PyTorch / JAX (JAX = scan, library default layout, median):", "", head, sep]
    for label, by_n in rows.items():
        if label.startswith("PyTorch") and label != "PyTorch forward":
            ratios = [
                by_n[n]["us"] / jax_best[n]["us"] if n in by_n and n in jax_best else None
                for n in sizes
            ]
            lines.append(
                f"| {label} | "
                + " | ".join("-" if q is None else f"{q:.1f}x" for q in ratios)
                + " |"
            )
    torch_rows = {k: v for k, v in rows.items() if k.startswith("PyTorch") and "forward" not in k}
    best = {
        n: min((by_n[n]["us"], label) for label, by_n in torch_rows.items() if n in by_n)
        for n in sizes
        if any(n in by_n for by_n in torch_rows.values())
    }
    lines += ["", "Fastest PyTorch form at each N against the JAX default (median):", ""]
    for n, (us, label) in best.items():
        ours = jax_best.get(n, {}).get("us")
        speedup = f"JAX {us / ours:.2f}x faster" if ours else "no JAX figure"
        lines.append(f"- N={n}: {label[8:]}, {_fmt(us)} us; {speedup}")
    lines += [
        "",
        "| N | layout | kernels | fusions | HLO instr | compile cold s | compile warm s | "
        "memory MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    inventory = []
    for n in sizes:
        for lay in ("stacked", "separate"):
            sel = [
                r
                for r in recs
                if r["n"] == n and r["config"].get("layout") == lay and r["impl"] == "jax"
            ]
            ops = next((r["config"] for r in sel if r["what"] == "ops"), None)
            if ops is None:
                continue
            comp = {r["config"]["cache"]: r["us"] / 1e6 for r in sel if r["what"] == "compile"}
            mem = next(r["config"]["bytes"] for r in sel if r["what"] == "memory")
            auto = " [auto]" if ops["auto"] else ""
            warm = f"{comp['warm']:.2f}" if "warm" in comp else "-"
            mem = f"{mem / 2**20:.0f}" if mem else "-"
            lines.append(
                f"| {n} | {lay}{auto} | {ops['kernels']} | {ops['fusions']} | "
                f"{ops['hlo_instructions']} | {comp.get('cold', 0):.1f} | {warm} | {mem} |"
            )
            inventory.append(f"- N={n}, {lay}: " + _inventory(ops.get("inventory", {})))
    lines += ["", "Device kernels of one step by kind (compiled while body):", ""] + inventory
    extra = [
        r
        for r in recs
        if r["what"]
        in (
            "lap_error",
            "fields_forward",
            "loss_and_grad",
            "gemm_4n_128_128",
            "memory_process_peak",
        )
        or (r["what"] == "scan_step" and r["config"].get("precision") != "highest")
        or (r["impl"] == "pytorch" and r["what"] in ("memory", "loss_check"))
    ]
    lines += ["", "Other measurements:"]
    for r in extra:
        c = {k: v for k, v in r["config"].items() if k != "device"}
        lines.append(
            f"- {r['impl']} {r['what']} N={r['n']}: "
            + (f"{_fmt(r['us'])} us; " if r["us"] is not None else "")
            + ", ".join(
                f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in c.items()
            )
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench_out", help="directory for JSON lines and weights")
    p.add_argument("--sizes", type=int, nargs="+", default=None, help=f"default: {SIZES}")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dispatch-steps", type=int, default=20)
    p.add_argument("--scan-steps", type=int, default=SCAN_STEPS, help="steps K per scan block")
    p.add_argument(
        "--max-stacked", type=int, default=10000, help="also time the stacked layout up to this N"
    )
    p.add_argument(
        "--precisions",
        nargs="*",
        default=list(PRECISIONS),
        help="extra matmul precisions (timed with their Laplacian error)",
    )
    p.add_argument(
        "--precision-sizes",
        type=int,
        nargs="*",
        default=None,
        help="sizes for the precision rows (default: the largest)",
    )
    p.add_argument("--hlo-dir", default=None, help="write each compiled block's HLO text here")
    p.add_argument("--cache-dir", default=None, help="persistent cache (default OUT/jax_cache)")
    p.add_argument("--quick", action="store_true", help="CPU smoke mode: small N, few reps")
    p.add_argument("--report", action="store_true", help="only print the tables of --out")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        print(report(out))
        return
    if args.quick:
        args.sizes = args.sizes or [64, 256]
        args.reps, args.dispatch_steps, args.scan_steps = 2, 2, 5
        args.precisions, args.max_stacked = [], 10**9
    args.sizes = args.sizes or list(SIZES)
    if args.precision_sizes is None:
        args.precision_sizes = [max(args.sizes)]
    run_jax(args)


if __name__ == "__main__":
    main()
