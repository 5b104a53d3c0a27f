"""The benchmark measures the same function in both frameworks, and the fast paths of the
library (stacked networks, compilation cache) compute what the reference paths compute."""

import json
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


@pytest.mark.parametrize("pde", ["helmholtz", "hetero"])
@pytest.mark.parametrize("layout", ["stacked", "separate"])
@pytest.mark.parametrize("n_freq, n_comp", [(3, 1), (1, 3)])  # mu 6 outputs as u; mu 2 of 6
def test_layouts_equal_the_reference_fields_and_gradients(pde, layout, n_freq, n_comp):
    spec = small_spec(pde, n_freq, n_comp)
    state = train.init_state(spec, 0)
    x = jax.random.uniform(jax.random.key(3), (32, 2))
    omega = jnp.linspace(0.5, 1.0, spec.n_freq)
    with benchmark.layout(layout):
        got = train.evaluate_fields(state.params, state.consts, spec, x, omega)
    ref = reference_fields(state.params, state.consts, spec, x, omega)
    for a, b in zip(got, ref, strict=True):
        if b is None:
            assert a is None
            continue
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5 * float(jnp.max(jnp.abs(b))))

    def loss(params, fields):
        u, lap, grad_u, mu, grad_mu = fields(params, state.consts, spec, x, omega)
        total = jnp.sum(jnp.abs(mu[..., None] * lap + u) ** 2)
        if grad_u is not None:
            total += jnp.sum(jnp.abs(jnp.sum(grad_mu[..., None] * grad_u, 0)) ** 2)
        return total

    with benchmark.layout(layout):
        g_fast = jax.grad(loss)(state.params, train.evaluate_fields)
    g_ref = jax.grad(loss)(state.params, reference_fields)
    for a, b in zip(jax.tree.leaves(g_fast), jax.tree.leaves(g_ref), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(b))))


def test_auto_layout_stacks_small_batches_of_equal_networks():
    spec = small_spec()
    state = train.init_state(spec, 0)
    x = jnp.zeros((8, 2))
    assert model.can_stack(
        state.params["u"], state.consts["u"], state.params["mu"], state.consts["mu"]
    )
    hlo = (
        jax.jit(lambda p: model.apply_pair(p, state.consts, x, "tanh", (2, 0)))
        .lower(state.params)
        .as_text()
    )
    assert "stablehlo.dot_general" in hlo and "batching_dims" in hlo  # one batched matmul
    uneven = train.Spec(2, 1, 1, 1.0, 1.0, Config(width=16, mu_width=8))
    s2 = train.init_state(uneven, 0)
    assert not model.can_stack(s2.params["u"], s2.consts["u"], s2.params["mu"], s2.consts["mu"])


def test_stacked_scan_block_equals_separate_block():
    spec, problem = benchmark.setup(64)
    spec = train.Spec(2, 1, 1, 4.0, 4.0, spec.cfg.replace(width=32, mu_width=32, n_features=16))
    state = train.init_state(spec, 0)
    out = {}
    for name in ("stacked", "separate"):
        with benchmark.layout(name):
            block, _ = benchmark.compile_block(spec, state, problem, 4)
        out[name] = block(state, problem)
    np.testing.assert_allclose(out["stacked"][1], out["separate"][1], rtol=1e-5)
    for a, b in zip(
        jax.tree.leaves(out["stacked"][0].params),
        jax.tree.leaves(out["separate"][0].params),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_loss_mapping_matches_the_spec_loss():
    """pde_weight = 1e-3 k^2 turns the library's normalised residual into the spec's."""
    n = 50
    spec, problem = benchmark.setup(n)
    state = train.init_state(spec, 0)
    data, pde = train.loss_terms(
        state.params, state.consts, spec, problem, problem.x, problem.u, jnp.ones(n)
    )
    u, lap, _, mu, _ = train.evaluate_fields(
        state.params, state.consts, spec, problem.x, problem.omega_ratio
    )
    r_spec = mu[..., None] * lap + benchmark.K_WAVE * u
    spec_loss = jnp.mean(jnp.abs(u - problem.u) ** 2) + 1e-3 * jnp.mean(jnp.abs(r_spec) ** 2)
    assert spec.cfg.pde_weight == pytest.approx(benchmark.PDE_WEIGHT)
    np.testing.assert_allclose(data + spec.cfg.pde_weight * pde, spec_loss, rtol=1e-5)


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


def test_step_variants_compute_the_same_losses(capsys):
    import step_variants

    switches = (model.masked_jets, train.make_optimizer)
    step_variants.main(
        ["--sizes", "32", "--steps", "3", "--reps", "1", "--no-defaults", "--variants"]
        + list(step_variants.VARIANTS)
    )
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["variant"] for r in recs] == list(step_variants.VARIANTS)
    assert all(r["loss_rel_block"] < 1e-4 and r["kernels"] > 0 for r in recs)
    assert (model.masked_jets, train.make_optimizer) == switches  # the library is restored
