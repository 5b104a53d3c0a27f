"""The benchmark measures the same function in both frameworks, and the fast paths of the
library (stacked networks, compilation cache) compute what the reference paths compute."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helmholtz_pinn import model, physics, train
from helmholtz_pinn.compile_cache import enable_compilation_cache
from helmholtz_pinn.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import benchmark  # noqa: E402


def reference_fields(params, consts, spec, x, omega_ratio):
    """evaluate_fields as first written: each network through FourierMLP.apply."""
    hetero = spec.cfg.pde == "hetero"
    su = spec.u_net.apply({"params": params["u"], "constants": consts["u"]}, x, order=2)
    ju = model.split_jet(su, spec.ndim, 2)
    order_mu = 1 if hetero else 0
    smu = spec.mu_net.apply({"params": params["mu"], "constants": consts["mu"]}, x, order=order_mu)
    jm = model.split_jet(smu, spec.ndim, order_mu)
    mu, grad_mu = physics.mu_complex(jm.value, jm.grad, omega_ratio, spec.cfg.mu_model)

    def to_c(a):
        return physics.u_complex(a, spec.n_freq, spec.n_comp)

    return to_c(ju.value), to_c(ju.lap), to_c(ju.grad) if hetero else None, mu, grad_mu


def small_spec(pde="helmholtz", n_freq=2, n_comp=1):
    cfg = Config(
        width=16,
        depth=2,
        mu_width=16,
        mu_depth=2,
        n_features=8,
        pde=pde,
        mu_model="per-frequency",
        pde_warmup=0,
        batch_size=32,
    )
    return train.Spec(ndim=2, n_freq=n_freq, n_comp=n_comp, sigma_u=2.0, sigma_mu=1.0, cfg=cfg)


def test_quick_jax_and_pytorch_losses_agree(tmp_path):
    torch = pytest.importorskip("torch")
    import benchmark_pytorch as bt

    n = 64
    spec, problem = benchmark.setup(n)
    state = train.init_state(spec, 0)
    data, pde = train.loss_terms(
        state.params, state.consts, spec, problem, problem.x, problem.u, jnp.ones(n)
    )
    jax_loss = float(data + benchmark.PDE_WEIGHT * pde)
    weights = {
        f"{net}/{k}": np.asarray(v)
        for net in ("u", "mu")
        for k, v in {**state.params[net], **state.consts[net]}.items()
    }
    for form in ("autograd", "fwdlap"):
        torch_loss = bt.Bench(weights, n, torch.device("cpu"), form).loss().item()
        assert torch_loss == pytest.approx(jax_loss, rel=1e-4)


def test_quick_mode_runs_both_sides_end_to_end(tmp_path):
    pytest.importorskip("torch")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "JAX_PLATFORMS": "cpu"}
    for script in ("benchmark.py", "benchmark_pytorch.py"):
        cmd = [sys.executable, str(root / "scripts" / script), "--quick", "--out", str(tmp_path)]
        if script == "benchmark.py":
            cmd += ["--sizes", "48"]
        subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=600)
    recs = benchmark._load(tmp_path)
    checks = [r for r in recs if r["what"] == "loss_check"]
    assert len(checks) == 2 and all(r["config"]["ok"] for r in checks)
    layouts = {r["config"]["layout"] for r in recs if r["what"] == "scan_step"}
    assert layouts == {"stacked", "separate"}
    assert all(r["config"]["kernels"] > 0 for r in recs if r["what"] == "ops")
    table = benchmark.report(tmp_path)
    assert "PyTorch / JAX" in table and "N=48" in table


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
