"""Fourier-feature MLPs that return their value, gradient and Laplacian together.

A network maps nondimensional coordinates x (N, d) through random Fourier features
gamma(x) = [sin(2 pi x B), cos(2 pi x B)], B ~ N(0, sigma^2) fixed (collection
"constants"), and ``depth`` hidden layers to ``n_out`` channels.

Derivatives come from forward-Laplacian propagation: each layer carries a *jet*, a
stack of shape (K, N, width) holding the value (row 0), the gradient (rows 1..d) and,
for ``order=2``, the Laplacian (row d+1). For a = h W + b and h' = phi(a):
    g_a = g W,  l_a = l W,  g' = phi'(a) g_a,  l' = phi'(a) l_a + phi''(a) sum_i g_a,i^2
so one matmul per layer on the stacked rows replaces nested autodiff.
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

HIGHEST = jax.lax.Precision.HIGHEST


class Jet(NamedTuple):
    """Value (N, n), gradient (d, N, n) or None, Laplacian (N, n) or None."""

    value: jax.Array
    grad: jax.Array | None
    lap: jax.Array | None


class FourierMLP(nn.Module):
    """MLP on random Fourier features, evaluated as a jet of derivative ``order`` 0, 1 or 2."""

    n_in: int
    n_out: int
    width: int = 128
    depth: int = 3
    n_features: int = 64
    sigma: float = 1.0
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array, order: int = 0) -> jax.Array:
        """Return the jet stack (K, N, n_out), K = 1, 1 + d or 2 + d for order 0, 1, 2."""
        b = self.variable(
            "constants",
            "B",
            lambda: self.sigma
            * jax.random.normal(self.make_rng("params"), (self.n_in, self.n_features)),
        ).value
        stack = fourier_jet(x, 2 * jnp.pi * b, order)
        for i in range(self.depth):
            stack = _dense(self, stack, self.width, f"hidden_{i}")
            stack = activation_jet(stack, self.activation, self.n_in, order)
        return _dense(self, stack, self.n_out, "out")


def _dense(module: nn.Module, stack: jax.Array, features: int, name: str) -> jax.Array:
    """a = h W + b on row 0 and g W, l W on the derivative rows (one matmul)."""
    w = module.param(f"{name}_kernel", nn.initializers.glorot_normal(), (stack.shape[-1], features))
    b = module.param(f"{name}_bias", nn.initializers.zeros, (features,))
    out = jnp.einsum("knw,wv->knv", stack, w, precision=HIGHEST)
    return jnp.concatenate([out[:1] + b[None, None, :], out[1:]], axis=0)


def fourier_jet(x: jax.Array, bs: jax.Array, order: int) -> jax.Array:
    """Jet of gamma(x) = [sin z, cos z], z = x Bs: dz/dx_i = Bs[i], Lap z = 0."""
    z = jnp.dot(x, bs, precision=HIGHEST)
    s, c = jnp.sin(z), jnp.cos(z)
    rows = [jnp.concatenate([s, c], axis=-1)[None]]
    if order >= 1:
        rows.append(jnp.concatenate([c[None] * bs[:, None, :], -s[None] * bs[:, None, :]], -1))
    if order >= 2:
        norm = jnp.sum(bs**2, axis=0)[None, :]
        rows.append(jnp.concatenate([-s * norm, -c * norm], axis=-1)[None])
    return jnp.concatenate(rows, axis=0)


def activation_jet(stack: jax.Array, activation: str, d: int, order: int) -> jax.Array:
    """Push a jet through tanh or sin: g' = phi' g, l' = phi' l + phi'' sum_i g_i^2."""
    a = stack[0]
    if activation == "tanh":
        h = jnp.tanh(a)
        d1 = 1 - h**2
        d2 = -2 * h * d1
    elif activation == "sin":
        h, d1 = jnp.sin(a), jnp.cos(a)
        d2 = -h
    else:
        raise ValueError(f"activation must be 'tanh' or 'sin'; got {activation!r}")
    rows = [h[None]]
    if order >= 1:
        rows.append(d1[None] * stack[1 : 1 + d])
    if order >= 2:
        rows.append((d1 * stack[1 + d] + d2 * jnp.sum(stack[1 : 1 + d] ** 2, axis=0))[None])
    return jnp.concatenate(rows, axis=0)


def split_jet(stack: jax.Array, d: int, order: int) -> Jet:
    """Split a jet stack (K, N, n) into value, gradient and Laplacian."""
    grad = stack[1 : 1 + d] if order >= 1 else None
    lap = stack[1 + d] if order >= 2 else None
    return Jet(stack[0], grad, lap)
