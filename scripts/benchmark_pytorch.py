"""The seed workload as PyTorch users write it, on the JAX side's weights.

Forms of the full training step (forward, Laplacian, loss, backward, Adam): eager with
the Laplacian by nested autograd and loss.item() every step; eager with the
forward-Laplacian propagation; each of those captured whole in one CUDA graph with fused
capturable Adam (replayed K times, loss read once after); and the strongest form a
competent user writes: the forward-Laplacian loss and its backward through
``torch.compile(fullgraph=True)`` (inductor, default mode and
``max-autotune-no-cudagraphs``, the compile time recorded), fused capturable Adam, the
whole step in one CUDA graph. TF32 is off. Before timing, the loss on the copied JAX
weights must equal the JAX loss within 1e-4 (relative), compiled forms included.

Run after ``scripts/benchmark.py --out OUT`` (which writes OUT/weights.npz); appends
JSON lines to OUT/torch.jsonl.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import K_WAVE, SCAN_STEPS, SPEC_PDE_WEIGHT, Recorder, repeat, workload  # noqa: E402

SOFTPLUS_ONE = math.log(math.e - 1.0)
ETA_SCALE = 0.1
LOSS_RTOL = 1e-4


class FourierNet(nn.Module):
    """gamma(x) = [sin 2 pi x B, cos 2 pi x B] -> tanh MLP, with JAX weights copied in."""

    def __init__(self, weights: dict, prefix: str):
        super().__init__()
        self.register_buffer("bs", torch.tensor(2 * np.pi * weights[f"{prefix}/B"]))
        depth = sum(k.startswith(f"{prefix}/hidden_") and k.endswith("_kernel") for k in weights)
        names = [f"hidden_{i}" for i in range(depth)] + ["out"]
        self.layers = nn.ModuleList()
        for name in names:
            w = weights[f"{prefix}/{name}_kernel"]  # flax (in, out)
            lin = nn.Linear(*w.shape)
            with torch.no_grad():
                lin.weight.copy_(torch.tensor(w.T))
                lin.bias.copy_(torch.tensor(weights[f"{prefix}/{name}_bias"]))
            self.layers.append(lin)

    def forward(self, x):
        z = x @ self.bs
        h = torch.cat([torch.sin(z), torch.cos(z)], dim=-1)
        for lin in self.layers[:-1]:
            h = torch.tanh(lin(h))
        return self.layers[-1](h)

    def jet(self, x):
        """Forward-Laplacian: (value (N, n), Laplacian (N, n)) through stacked rows."""
        bs = self.bs
        z = x @ bs
        s, c = torch.sin(z), torch.cos(z)
        norm = (bs**2).sum(0)
        h = torch.cat([s, c], -1)
        g = torch.cat([c[None] * bs[:, None], -s[None] * bs[:, None]], -1)  # (d, N, F)
        lap = -torch.cat([s * norm, c * norm], -1)
        d = x.shape[1]
        for lin in self.layers[:-1]:
            a = torch.cat([h[None], g, lap[None]]) @ lin.weight.T  # one matmul, d + 2 rows
            t = torch.tanh(a[0] + lin.bias)
            d1 = 1 - t * t
            ga = a[1 : 1 + d]
            h, g = t, d1 * ga
            lap = d1 * a[1 + d] - 2 * t * d1 * (ga * ga).sum(0)
        out = self.layers[-1]
        return out(h), lap @ out.weight.T


def nested_laplacian(u_net: FourierNet, x):
    """(u (N, 2), Lap u (N, 2)) by autograd of autograd, as users write it."""
    u = u_net(x)
    laps = []
    for j in range(u.shape[1]):
        (g,) = torch.autograd.grad(u[:, j].sum(), x, create_graph=True)
        lap = 0
        for i in range(x.shape[1]):
            (h,) = torch.autograd.grad(g[:, i].sum(), x, create_graph=True)
            lap = lap + h[:, i]
        laps.append(lap)
    return u, torch.stack(laps, dim=1)


def loss_fn(u_net, mu_net, x, u_obs, form: str):
    """mean|u - u_obs|^2 + 1e-3 mean|mu Lap u + k u|^2, in real arithmetic."""
    u, lap = nested_laplacian(u_net, x) if form == "autograd" else u_net.jet(x)
    o = mu_net(x)
    mu_re = nn.functional.softplus(o[:, 0] + SOFTPLUS_ONE)
    mu_im = ETA_SCALE * nn.functional.softplus(o[:, 1] + SOFTPLUS_ONE)  # G'' >= 0
    r_re = mu_re * lap[:, 0] - mu_im * lap[:, 1] + K_WAVE * u[:, 0]
    r_im = mu_re * lap[:, 1] + mu_im * lap[:, 0] + K_WAVE * u[:, 1]
    data = ((u - u_obs) ** 2).sum(1).mean()
    return data + SPEC_PDE_WEIGHT * (r_re**2 + r_im**2).mean()


class Bench:
    """Networks, data and optimizer for one form at one N."""

    def __init__(self, weights, n, device, form, capturable=False, fused=False, compile=None):
        self.u_net = FourierNet(weights, "u").to(device)
        self.mu_net = FourierNet(weights, "mu").to(device)
        x, u = workload(n)
        self.x = torch.tensor(x, device=device, requires_grad=form == "autograd")
        self.u_obs = torch.tensor(np.stack([u.real, u.imag], 1), device=device)
        self.form = form
        params = [*self.u_net.parameters(), *self.mu_net.parameters()]
        self.opt = torch.optim.Adam(params, lr=1e-3, capturable=capturable, fused=fused)
        self._loss = self._eager_loss
        if compile is not None:  # loss and (through AOTAutograd) its backward compiled
            self._loss = torch.compile(
                self._eager_loss, fullgraph=True, dynamic=False, mode=compile
            )

    def _eager_loss(self):
        return loss_fn(self.u_net, self.mu_net, self.x, self.u_obs, self.form)

    def loss(self):
        return self._loss()

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss()
        loss.backward()
        self.opt.step()
        return loss


def time_reps(fn, reps, per_call, sync):
    """:func:`benchmark.repeat` of ``fn`` followed by ``sync`` (the device's queue drained)."""
    return repeat(lambda: (fn(), sync()), reps, per_call)


def eager(bench, steps):
    def run():
        for _ in range(steps):
            bench.step().item()  # what users write: read the loss every step

    return run


def graphed(bench, steps):
    """Capture one whole step (zero_grad, loss, backward, Adam) and replay it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            bench.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    bench.opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = bench.step()

    def run():
        for _ in range(steps):
            graph.replay()
        static_loss.item()  # the loss is read once per K replays

    return run


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench_out")
    p.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="default: the sizes the JAX side ran"
    )
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--eager-steps", type=int, default=20)
    p.add_argument("--graph-steps", type=int, default=SCAN_STEPS)
    p.add_argument(
        "--compile-modes",
        nargs="*",
        default=["default"],
        help="torch.compile modes of the compiled forms (CUDA only; none: skip them); "
        "max-autotune-no-cudagraphs compiles for minutes (docs/performance.md), so it is opt-in",
    )
    p.add_argument(
        "--kinds",
        nargs="*",
        default=["eager", "graph"],
        choices=["eager", "graph"],
        help="which uncompiled forms to time (default both)",
    )
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    name = f"cuda:{torch.cuda.get_device_name()}" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    weights = dict(np.load(out / "weights.npz"))
    jax_losses = {int(k.split("/")[1]): v for k, v in weights.items() if k.startswith("loss/")}
    sizes = [n for n in args.sizes or sorted(jax_losses) if n in jax_losses]
    if args.quick:
        args.reps, args.eager_steps, args.graph_steps = 2, 2, 5
    rec = Recorder(out / "torch.jsonl", "pytorch", name)
    rec("versions", 0, torch=torch.__version__, tf32=torch.backends.cuda.matmul.allow_tf32)
    for n in sizes:
        ok = True
        for form in ("autograd", "fwdlap"):
            loss = Bench(weights, n, device, form).loss().item()
            ref = float(jax_losses[n][0])
            rel = abs(loss - ref) / abs(ref)
            ok &= rel <= LOSS_RTOL
            rec(
                "loss_check",
                n,
                form=form,
                torch_loss=loss,
                jax_loss=ref,
                rel_diff=rel,
                ok=rel <= LOSS_RTOL,
            )
        if not ok:
            print(f"N={n}: PyTorch and JAX losses differ; not timing", file=sys.stderr)
            continue
        bench = Bench(weights, n, device, "fwdlap")
        with torch.no_grad():
            med, lo = time_reps(
                lambda b=bench: [b.u_net(b.x) for _ in range(100)][-1], args.reps, 100, sync
            )
        rec("forward", n, med, lo)
        forms = [
            ("eager, autograd Laplacian, loss.item() each step", "autograd", False),
            ("eager, forward-Laplacian, loss.item() each step", "fwdlap", False),
        ]
        forms = [(label, form, False, None) for label, form, _ in forms] * ("eager" in args.kinds)
        if cuda and "graph" in args.kinds:
            forms += [
                ("CUDA graph, autograd Laplacian, fused Adam", "autograd", True, None),
                ("CUDA graph, forward-Laplacian, fused Adam", "fwdlap", True, None),
            ]
        if cuda:
            forms += [
                (f"compiled ({mode}), CUDA graph, fused Adam", "fwdlap", True, mode)
                for mode in args.compile_modes
            ]
        for label, form, graph, mode in forms:
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            try:
                bench = Bench(weights, n, device, form, graph, fused=graph, compile=mode)
                extra = {}
                if mode is not None:
                    t0 = time.perf_counter()
                    loss = bench.loss().item()  # compiles the forward
                    bench.step()  # and the backward
                    sync()
                    extra = dict(compile_s=time.perf_counter() - t0, compile_mode=mode)
                    rel = abs(loss - float(jax_losses[n][0])) / abs(float(jax_losses[n][0]))
                    rec(
                        "loss_check",
                        n,
                        form=label,
                        torch_loss=loss,
                        rel_diff=rel,
                        ok=rel <= LOSS_RTOL,
                    )
                    if rel > LOSS_RTOL:
                        continue
                run = graphed(bench, args.graph_steps) if graph else eager(bench, args.eager_steps)
                steps = args.graph_steps if graph else args.eager_steps
                med, lo = time_reps(run, args.reps, steps, sync)
                rec(label, n, med, lo, form=form, cuda_graph=graph, **extra)
                if cuda:
                    rec("memory", n, form=label, bytes=torch.cuda.max_memory_allocated())
            except Exception as e:  # report and go on with the other forms
                rec(label, n, form=form, cuda_graph=graph, error=repr(e)[:300])


if __name__ == "__main__":
    main()
