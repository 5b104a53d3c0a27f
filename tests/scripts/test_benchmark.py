"""The benchmark measures the library's own training step on the seed workload, and the
library's fast paths (stacked networks, compilation cache) compute what the reference
paths compute.

Tolerances: the stacked layout evaluates both networks as one batched matmul per layer
(other kernels, other rounding), so fields agree to float32 rounding (asserted 2e-5
relative to the largest value) and parameter gradients, sums over 32 points, to 1e-4.
"""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL

from helmholtz_pinn import laws
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit.compile_cache import enable_compilation_cache
from helmholtz_pinn.fit.plan import program
from helmholtz_pinn.pinn import model, scaling, train

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import benchmark  # noqa: E402


def reference_fields(params, consts, spec, x, omega_ratio):
    """(u, grad_u, lap_u, mu, grad_mu) as first written: each network through its own
    ``FourierMLP.apply`` (flax), carrying the derivative order the form needs."""
    u_net, mu_net = spec.networks(1.0, 1.0)  # sigma only sets B at init
    su = u_net.apply({"params": params["u"], "constants": consts["u"]}, x, order=spec.u_order)
    sm = mu_net.apply({"params": params["mu"], "constants": consts["mu"]}, x, order=spec.mu_order)
    ju = model.split_jet(su, spec.ndim, spec.u_order)
    jm = model.split_jet(sm, spec.ndim, spec.mu_order)
    mu, grad_mu = laws.get(spec.mu_model).network(jm.value, jm.grad, omega_ratio)

    def to_c(a):
        return None if a is None else scaling.u_complex(a, spec.n_freq, spec.n_comp)

    return to_c(ju.value), to_c(ju.grad), to_c(ju.lap), mu, grad_mu


def fields(params, consts, spec, x, omega_ratio):
    f = train.evaluate_fields(params, consts, spec, x, omega_ratio)
    return f.u, f.grad_u, f.lap_u, f.mu, f.grad_mu


@pytest.mark.parametrize("layout", ["stacked", "separate"])
@pytest.mark.parametrize(
    "pde, n_freq, n_comp",
    [("helmholtz", 3, 1), ("hetero", 1, 3)],  # mu 6 outputs as u, values only; 2 of 6, + grad
)
def test_layouts_equal_the_reference_fields_and_gradients(layout, pde, n_freq, n_comp):
    settings = {**SMALL, "mu_width": 16, "mu_depth": 2, "pde": pde, "mu_model": "per-frequency"}
    cfg = Config(**settings)
    spec = program(cfg, 2, n_freq, n_comp)
    state = train.init_state(spec, 0, 2.0, 1.0, 1e-3)
    assert model.can_stack(
        state.params["u"], state.consts["u"], state.params["mu"], state.consts["mu"]
    )
    x = jax.random.uniform(jax.random.key(3), (32, 2))
    omega = jnp.linspace(0.5, 1.0, n_freq)

    def run(fn):
        return jax.jit(fn, static_argnums=2)(state.params, state.consts, spec, x, omega)

    with benchmark.layout(layout):
        got = run(fields)
    ref = run(reference_fields)
    for a, b in zip(got, ref, strict=True):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * float(jnp.max(jnp.abs(b))))

    def loss(params, fn):
        u, grad_u, lap, mu, grad_mu = fn(params, state.consts, spec, x, omega)
        total = jnp.sum(jnp.abs(mu[..., None] * lap + u) ** 2)
        if grad_mu is not None:
            total += jnp.sum(jnp.abs(jnp.sum(grad_mu[..., None] * grad_u, 0)) ** 2)
        return total

    with benchmark.layout(layout):
        g_fast = jax.jit(jax.grad(loss), static_argnums=1)(state.params, fields)
    g_ref = jax.jit(jax.grad(loss), static_argnums=1)(state.params, reference_fields)
    for a, b in zip(jax.tree.leaves(g_fast), jax.tree.leaves(g_ref), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(b))))


def test_stacked_scan_block_equals_separate_block():
    """Four Adam steps of the seed workload (smaller networks) in each forced layout: the
    same losses and parameters, and the two programs differ (one batched matmul per layer
    against two)."""
    spec, state, problem = benchmark.setup(64, width=32, mu_width=32, n_features=16)
    out, kernels = {}, {}
    for name in ("stacked", "separate"):
        with benchmark.layout(name):
            block, _ = benchmark.compile_block(spec, state, problem, 4)
        out[name] = block(state, problem)
        kernels[name] = benchmark.count_ops(block.as_text())["kernels"]
    assert kernels["stacked"] != kernels["separate"]
    np.testing.assert_allclose(out["stacked"][1], out["separate"][1], rtol=1e-5)
    for a, b in zip(
        jax.tree.leaves(out["stacked"][0].params),
        jax.tree.leaves(out["separate"][0].params),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_loss_mapping_matches_the_spec_loss():
    """pde_weight = 1e-3 k^2 turns the library's normalised residual into the spec's
    mean|u - u_obs|^2 + 1e-3 mean|mu Lap u + k u|^2, written here from the fields."""
    spec, state, problem = benchmark.setup(50, width=32, mu_width=32, n_features=16)

    def spec_loss(params):
        f = train.evaluate_fields(params, state.consts, spec, problem.x, problem.omega_ratio)
        r = f.mu[..., None] * f.lap_u + benchmark.K_WAVE * f.u
        return jnp.mean(jnp.abs(f.u - problem.u) ** 2) + 1e-3 * jnp.mean(jnp.abs(r) ** 2)

    loss = jax.jit(lambda p: benchmark.seed_loss(p, state, spec, problem)[0])(state.params)
    assert spec.pde_weight == benchmark.PDE_WEIGHT
    np.testing.assert_allclose(loss, jax.jit(spec_loss)(state.params), rtol=1e-5)


def test_quick_jax_and_pytorch_losses_agree():
    torch = pytest.importorskip("torch")
    import benchmark_pytorch as bt

    n = 64
    spec, state, problem = benchmark.setup(n)
    jax_loss = float(benchmark.seed_loss(state.params, state, spec, problem)[0])
    weights = {
        f"{net}/{k}": np.asarray(v)
        for net in ("u", "mu")
        for k, v in {**state.params[net], **state.consts[net]}.items()
    }
    for form in ("autograd", "fwdlap"):
        torch_loss = bt.Bench(weights, n, torch.device("cpu"), form).loss().item()
        assert torch_loss == pytest.approx(jax_loss, rel=1e-4)


def test_quick_mode_runs_end_to_end(tmp_path):
    """``--quick`` (JAX side; the PyTorch side too where torch is installed) writes
    finite losses, both layouts' timings and kernel counts, and the report's tables."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    scripts = ["benchmark.py"]
    try:
        import torch  # noqa: F401

        scripts.append("benchmark_pytorch.py")
    except ImportError:
        pass
    for script in scripts:
        cmd = [sys.executable, str(ROOT / "scripts" / script), "--quick", "--out", str(tmp_path)]
        if script == "benchmark.py":
            cmd += ["--sizes", "48"]
        subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=600)
    recs = benchmark._load(tmp_path)
    assert np.isfinite(next(r for r in recs if r["what"] == "loss")["config"]["loss"])
    layouts = {r["config"]["layout"] for r in recs if r["what"] == "scan_step"}
    assert layouts == {"stacked", "separate"}
    assert all(r["config"]["kernels"] > 0 for r in recs if r["what"] == "ops")
    checks = [r for r in recs if r["what"] == "loss_check"]
    assert len(checks) == (2 if len(scripts) == 2 else 0) and all(r["config"]["ok"] for r in checks)
    table = benchmark.report(tmp_path)
    assert "PyTorch / JAX" in table and "N=48" in table and benchmark.DEFAULT_ROW in table


def test_count_ops_reads_the_while_body():
    hlo = (
        jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, y: jnp.sin(y) @ y, x))
        .lower(jnp.ones((4, 4)))
        .compile()
        .as_text()
    )
    counts = benchmark.count_ops(hlo)
    assert counts["kernels"] >= 1 and counts["hlo_instructions"] >= counts["kernels"]
    assert sum(counts["inventory"].values()) == counts["kernels"]


def test_compilation_cache_is_configured(tmp_path):
    saved = {
        k: getattr(jax.config, k)
        for k in ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    }
    try:
        path = enable_compilation_cache(tmp_path / "cache")
        assert path.is_dir() and jax.config.jax_compilation_cache_dir == str(path)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
        with pytest.raises(ValueError, match="min_compile_time_s"):
            enable_compilation_cache(tmp_path, min_compile_time_s=-1)
    finally:
        for k, v in saved.items():
            jax.config.update(k, v)


def test_precision_defaults_to_highest_and_follows_the_jax_setting():
    assert model.matmul_precision() in (None, jax.lax.Precision.HIGHEST)
    with jax.default_matmul_precision("tensorfloat32"):
        assert model.matmul_precision() is None  # defers to jax's setting
