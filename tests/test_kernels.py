"""The fused Pallas MLP-jet kernels of scripts/pallas_mlp_jet.py (an experiment measured on
the H200 and not adopted: docs/performance.md) equal the XLA jet propagation (interpret
mode on CPU)."""

import functools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helmholtz_pinn import model, physics

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from pallas_mlp_jet import apply_jet_fused, mlp_jet  # noqa: E402

DIMS = (24, 32, 32, 3)  # F_in 24 and n_out 3 are padded to 32 and 16 inside
TOL = 1e-5


def reference(stack, weights, biases, activation, d, order):
    """The layer loop of model.apply_jet (XLA)."""
    for w, b in zip(weights[:-1], biases[:-1], strict=True):
        stack = model.activation_jet(model.affine_jet(stack, w, b), activation, d, order)
    return model.affine_jet(stack, weights[-1], biases[-1])


def normal(seed, shape, scale=1.0):
    """float32 N(0, scale^2) samples (NumPy: no per-shape compilation)."""
    return jnp.asarray(scale * np.random.default_rng(seed).standard_normal(shape), jnp.float32)


def random_network(seed, dims=DIMS, lead=()):
    """Glorot-scaled kernels and non-zero biases for layer widths ``dims``."""
    layers = range(len(dims) - 1)
    weights = tuple(
        normal((seed, i), (*lead, dims[i], dims[i + 1]), 1 / np.sqrt(dims[i])) for i in layers
    )
    biases = tuple(normal((seed, i, 1), (*lead, dims[i + 1]), 0.3) for i in layers)
    return weights, biases


def rel_err(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))


def compile_fast(fn, *args):
    """jit(fn) for these args, compiled without XLA's backend optimisation: on these tiny
    shapes the CPU compiler spends far longer optimising than running (tests 2x faster)."""
    return jax.jit(fn).lower(*args).compile({"xla_backend_optimization_level": 0})


def run_fast(fn, *args):
    return compile_fast(fn, *args)(*args)


def loss_and_grad(fn, cotangent):
    """value_and_grad of sum(c * out^2) w.r.t. (weights, biases), with the output."""

    def loss(params, *args):
        out = fn(*params, *args)
        return jnp.sum(cotangent * out**2), out

    return jax.value_and_grad(loss, has_aux=True)


@functools.cache
def fused_and_reference(d, order, activation):
    """Outputs and gradients of the fused kernels and the reference on 50 points (padded
    to 64: four tiles of 16), computed once for the value and the gradient tests."""
    seed = 10 * d + order
    rows = model.jet_rows(d, order)
    stack = normal((seed, 0), (rows, 50, DIMS[0]))
    params = random_network((seed, 1))
    cotangent = normal((seed, 2), (rows, 50, DIMS[-1]))
    fused = functools.partial(mlp_jet, activation=activation, d=d, order=order, block_n=16)
    ref = functools.partial(reference, activation=activation, d=d, order=order)
    (_, out), grads = run_fast(loss_and_grad(lambda w, b: fused(stack, w, b), cotangent), params)
    (_, out_ref), grads_ref = run_fast(
        loss_and_grad(lambda w, b: ref(stack, w, b), cotangent), params
    )
    return out, out_ref, grads, grads_ref


# order 0 has no derivative rows, so d = 3 would repeat d = 2
CASES = [(d, o, act) for d in (2, 3) for o in (0, 1, 2) for act in ("tanh", "sin") if d < 3 or o]


@pytest.mark.parametrize("d, order, activation", CASES)
def test_values_equal_the_xla_jet(d, order, activation):
    out, out_ref, _, _ = fused_and_reference(d, order, activation)
    assert out.shape == (model.jet_rows(d, order), 50, DIMS[-1])
    assert rel_err(out, out_ref) < TOL


@pytest.mark.parametrize("d, order, activation", CASES)
def test_weight_gradients_equal_the_xla_jet(d, order, activation):
    _, _, grads, grads_ref = fused_and_reference(d, order, activation)
    for g, g_ref in zip(jax.tree.leaves(grads), jax.tree.leaves(grads_ref), strict=True):
        assert g.shape == g_ref.shape
        assert rel_err(g, g_ref) < TOL


def test_stack_gets_a_zero_cotangent():
    stack = normal(3, (1, 40, DIMS[0]))
    weights, biases = random_network(4, (DIMS[0], DIMS[-1]))  # output layer

    def loss(s):
        return jnp.sum(mlp_jet(s, weights, biases, d=2, order=0, block_n=16) ** 2)

    assert not jnp.any(run_fast(jax.grad(loss), stack))


def test_vmap_over_two_networks_equals_each_network():
    """As model.apply_pair's "stacked" layout: each network has its own Fourier stack."""
    d, order, rows, dims = 2, 1, model.jet_rows(2, 1), (24, 32, 3)
    stack = normal(5, (2, rows, 40, dims[0]))
    weights, biases = random_network(6, dims, lead=(2,))
    cotangent = normal(7, (rows, 40, dims[-1]))
    fused = functools.partial(mlp_jet, activation="tanh", d=d, order=order, block_n=16)
    value_and_grad = loss_and_grad(lambda w, b, s: fused(s, w, b), cotangent)
    batched = run_fast(jax.vmap(value_and_grad), (weights, biases), stack)
    networks = [jax.tree.map(lambda a, i=i: a[i], (weights, biases)) for i in range(2)]
    single_fn = compile_fast(value_and_grad, networks[0], stack[0])
    for i in range(2):
        single = single_fn(networks[i], stack[i])
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(single), strict=True):
            np.testing.assert_allclose(a[i], b, rtol=1e-6, atol=1e-6 * float(jnp.abs(b).max()))


@functools.cache
def fourier_mlp():
    """A FourierMLP (width 24 and 24 features: padded to 32 inside), its variables, 40
    points x and its order-2 jet from apply_jet_fused."""
    net = model.FourierMLP(n_in=2, n_out=3, width=24, depth=2, n_features=12, sigma=2.0)
    x = jnp.asarray(np.random.default_rng(8).random((40, 2)), jnp.float32)
    variables = net.init(jax.random.key(7), x)
    params, consts = variables["params"], variables["constants"]
    fused = run_fast(lambda p, c, x: apply_jet_fused(p, c, x, "tanh", 2), params, consts, x)
    return net, variables, x, fused


def test_apply_jet_fused_equals_apply_jet():
    _, variables, x, fused = fourier_mlp()
    params, consts = variables["params"], variables["constants"]
    expected = run_fast(lambda p, c, x: model.apply_jet(p, c, x, "tanh", 2), params, consts, x)
    assert fused.shape == expected.shape == (model.jet_rows(2, 2), 40, 3)
    assert rel_err(fused, expected) < TOL


def test_laplacian_row_equals_the_hessian_trace():
    net, variables, x, fused = fourier_mlp()
    lap_ref = run_fast(
        lambda x: physics.laplacian_reference(lambda p: net.apply(variables, p[None])[0, 0], x), x
    )
    assert float(jnp.max(jnp.abs(lap_ref))) > 1.0  # a non-trivial Laplacian
    assert rel_err(fused[1 + 2], lap_ref) < 1e-4


def test_kernels_lower_through_the_triton_backend():
    """Cross-lowering for CUDA runs the Pallas -> Triton IR lowering here, without a GPU."""
    stack = normal(10, (2, 4, 40, DIMS[0]))
    weights, biases = random_network(11, lead=(2,))
    for precision in ("highest", "tf32x3"):
        fused = functools.partial(
            mlp_jet, d=2, order=2, block_n=16, precision=precision, interpret=False
        )

        def loss(w, b, s, fused=fused):
            return jnp.sum(fused(s, w, b) ** 2)

        grad = jax.vmap(jax.grad(loss, argnums=(0, 1)))
        lowered = jax.jit(grad).trace(weights, biases, stack).lower(lowering_platforms=("cuda",))
        text = lowered.as_text()
        assert "mlp_jet_forward" in text and "mlp_jet_backward" in text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(block_n=24), "block_n must be a power of two"),
        (dict(order=1), r"stack must be float32 with shape \(3, N, F_in\)"),
        (dict(precision="tf32"), "precision must be one of"),
        (dict(activation="relu"), "activation must be 'tanh' or 'sin'"),
    ],
)
def test_bad_arguments_are_rejected_before_tracing(kwargs, message):
    stack = jnp.ones((4, 40, DIMS[0]))
    weights, biases = random_network(0)
    with pytest.raises(ValueError, match=message):
        mlp_jet(stack, weights, biases, **{"d": 2, "order": 2, **kwargs})
