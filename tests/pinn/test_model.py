"""Forward-Laplacian propagation equals nested autodiff of the same network."""

import jax
import jax.numpy as jnp
import pytest

from helmholtz_pinn.pinn import model
from helmholtz_pinn.pinn.model import FourierMLP, split_jet


def float64_net(d, n_out, width, depth, n_features, activation, n_points, key):
    """A FourierMLP with float64 variables and float64 points x (n_points, d)."""
    net = FourierMLP(
        n_in=d,
        n_out=n_out,
        width=width,
        depth=depth,
        n_features=n_features,
        sigma=2.0,
        activation=activation,
    )
    x = jax.random.uniform(jax.random.key(key), (n_points, d), dtype=jnp.float64)
    variables = jax.tree.map(lambda a: a.astype(jnp.float64), net.init(jax.random.key(0), x))
    return net, variables, x


FIRST_LAYER = pytest.mark.parametrize("fused", [True, False], ids=["fused-first", "features-first"])


@FIRST_LAYER
@pytest.mark.parametrize("masked", [True, False], ids=["masked", "concatenated"])
@pytest.mark.parametrize("activation", ["tanh", "sin"])
@pytest.mark.parametrize("d", [2, 3])
def test_forward_laplacian_equals_hessian_trace(activation, d, masked, fused, monkeypatch):
    """Both forms of the jet layers (masked for small batches, concatenated rows for large
    ones: model.masked_jets) and of the first layer (the features' jet then the layer, or
    both at once: model.fused_first_layer) give the Hessian trace and the Jacobian in
    float64."""
    monkeypatch.setattr(model, "masked_jets", lambda stack: masked)
    monkeypatch.setattr(model, "fused_first_layer", lambda: fused)
    with jax.enable_x64(True):
        net, variables, x = float64_net(d, 3, 24, 3, 16, activation, 7, key=1)
        jet = split_jet(net.apply(variables, x, order=2), d, 2)

        def f(p):
            return net.apply(variables, p[None])[0, 0]

        hess = jax.vmap(jax.hessian(f))(x)
        lap_ref = jnp.trace(hess, axis1=-2, axis2=-1)
        grad_ref = jnp.moveaxis(jax.vmap(jax.jacfwd(f))(x), -1, 0)
        scale = jnp.max(jnp.abs(lap_ref))
        assert scale > 1.0  # a non-trivial Laplacian
        assert jnp.max(jnp.abs(jet.lap - lap_ref)) < 1e-11 * scale
        assert jnp.max(jnp.abs(jet.grad - grad_ref)) < 1e-11 * jnp.max(jnp.abs(grad_ref))
        assert jnp.allclose(jet.value, jax.vmap(f)(x), rtol=0, atol=1e-13)


def test_orders_share_the_value_and_gradient():
    net = FourierMLP(n_in=2, n_out=4, width=16, depth=2, n_features=8, sigma=1.0)
    x = jax.random.uniform(jax.random.key(2), (5, 2))
    variables = net.init(jax.random.key(0), x)
    s0, s1, s2 = (net.apply(variables, x, order=k) for k in (0, 1, 2))
    assert s0.shape == (1, 5, 4) and s1.shape == (3, 5, 4) and s2.shape == (4, 5, 4)
    assert jnp.allclose(s0[0], s2[0]) and jnp.allclose(s1[1:], s2[1:3])


def test_fourier_matrix_is_a_constant_with_the_configured_scale():
    net = FourierMLP(n_in=2, n_out=2, width=8, depth=1, n_features=4096, sigma=3.0)
    variables = net.init(jax.random.key(0), jnp.zeros((1, 2)))
    b = variables["constants"]["B"]
    assert "B" not in variables["params"]
    assert b.shape == (2, 4096)
    assert abs(float(jnp.std(b)) - 3.0) < 0.1


@FIRST_LAYER
@pytest.mark.parametrize("activation", ["tanh", "sin"])
@pytest.mark.parametrize("d", [2, 3])
def test_second_derivative_jet_equals_jax_hessian(activation, d, fused, monkeypatch):
    """The HESS jet (mixed d_i d_j for the Navier forms) equals jax.hessian in float64, its
    trace equals the LAP jet, and the value and gradient rows equal the lower orders;
    with either form of the first layer."""
    monkeypatch.setattr(model, "fused_first_layer", lambda: fused)
    with jax.enable_x64(True):
        net, variables, x = float64_net(d, 2, 16, 2, 8, activation, 6, key=3)
        jet = split_jet(net.apply(variables, x, order=model.HESS), d, model.HESS)
        ref = jax.vmap(jax.hessian(lambda p: net.apply(variables, p[None])[0, 0]))(
            x
        )  # (N, n, d, d)
        ref = jnp.moveaxis(ref, (2, 3), (0, 1))  # (d, d, N, n)
        scale = jnp.max(jnp.abs(ref))
        assert scale > 1.0 and jnp.max(jnp.abs(ref[0, 1])) > 0.1  # off-diagonals are not 0
        assert jnp.max(jnp.abs(jet.hess - ref)) < 1e-11 * scale
        lap = split_jet(net.apply(variables, x, order=model.LAP), d, model.LAP)
        assert jnp.max(jnp.abs(jet.lap - lap.lap)) < 1e-11 * scale
        assert jnp.allclose(jet.grad, lap.grad, rtol=0, atol=1e-13)
        assert net.apply(variables, x, order=model.HESS).shape[0] == model.jet_rows(d, model.HESS)


@pytest.mark.parametrize("order", [model.VALUE, model.GRAD, model.LAP, model.HESS])
@pytest.mark.parametrize("d", [2, 3])
def test_the_first_layer_at_once_equals_the_features_then_the_layer(d, order):
    """fourier_affine_jet (the rows' scaling moved onto W) is the jet of the features
    followed by the affine layer, row for row, in float32 (a float32 rounding apart)."""
    x = jax.random.uniform(jax.random.key(4), (33, d))
    bs = 2 * jnp.pi * 1.5 * jax.random.normal(jax.random.key(5), (d, 12))
    w = jax.random.normal(jax.random.key(6), (24, 10)) / 5
    b = jax.random.normal(jax.random.key(7), (10,))
    at_once = model.fourier_affine_jet(x, bs, w, b, order)
    in_turn = model.affine_jet(model.fourier_jet(x, bs, order), w, b)
    assert at_once.shape == in_turn.shape == (model.jet_rows(d, order), 33, 10)
    scale = jnp.max(jnp.abs(in_turn), axis=(1, 2), keepdims=True)
    assert jnp.max(jnp.abs(at_once - in_turn) / scale) < 1e-5
