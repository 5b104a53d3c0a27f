"""Fourier-feature MLPs that return their value, gradient and Laplacian together.

A network maps nondimensional coordinates x (N, d) through random Fourier features
gamma(x) = [sin(2 pi x B), cos(2 pi x B)], B ~ N(0, sigma^2) fixed (collection
"constants"), and ``depth`` hidden layers to ``n_out`` channels.

Derivatives come from forward-Laplacian propagation: each layer carries a *jet*, a
stack of shape (K, N, width) holding the value (row 0), the gradient (rows 1..d) and,
for ``order=LAP``, the Laplacian (row d+1), or for ``order=HESS`` the second
derivatives d_i d_j for the pairs i <= j (rows d+1 ..). For a = h W + b and h' = phi(a):
    g_a = g W,  l_a = l W,  g' = phi'(a) g_a,  l' = phi'(a) l_a + phi''(a) sum_i g_a,i^2
    s'_ij = phi'(a) s_a,ij + phi''(a) g_a,i g_a,j
so one matmul per layer on the stacked rows replaces nested autodiff.
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from helmholtz_pinn.errors import InputError

HIGHEST = jax.lax.Precision.HIGHEST
VALUE, GRAD, LAP, HESS = 0, 1, 2, 3  # jet orders: value; + gradient; + Laplacian; + d_i d_j
# apply_pair's "auto" layout stacks both networks up to this many points (the measured
# crossover on a GPU: docs/performance.md)
STACK_MAX_POINTS = 700
# Up to this many points a jet layer is one masked elementwise expression over the whole
# stack (bias and activation rows chosen by row index: XLA fuses each layer into one
# kernel after its matmul); above it, rows are computed apart and concatenated (fewer
# transcendental evaluations and memory passes). GPU only (``masked_jets``); the crossover
# is measured in docs/performance.md.
MASKED_MAX_POINTS = 2048


class Jet(NamedTuple):
    """Value (N, n), gradient (d, N, n), Laplacian (N, n), second derivatives
    (d, d, N, n) (symmetric); None where the order did not carry them."""

    value: jax.Array
    grad: jax.Array | None
    lap: jax.Array | None
    hess: jax.Array | None = None


def pairs(d: int) -> list[tuple[int, int]]:
    """The (i, j), i <= j, of the second-derivative rows of a HESS jet, in row order."""
    return [(i, j) for i in range(d) for j in range(i, d)]


class FourierMLP(nn.Module):
    """MLP on random Fourier features: ``depth`` hidden layers of ``width``, output
    ``n_out``. Its variables are ``params`` (``hidden_<i>_kernel``, ``hidden_<i>_bias``,
    ``out_kernel``, ``out_bias``) and ``constants`` (``B`` (n_in, n_features), fixed
    Fourier frequencies, ``sigma`` cycles per unit of x). The module declares them; the
    forward pass is :func:`apply_jet`, the one pure function both ``apply`` and the
    training step use."""

    n_in: int
    n_out: int
    width: int = 128
    depth: int = 3
    n_features: int = 64
    sigma: float = 1.0
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array, order: int = 0) -> jax.Array:
        """Return the jet stack (K, N, n_out), K = :func:`jet_rows` (d, order)."""
        b = self.variable(
            "constants",
            "B",
            lambda: (
                self.sigma
                * jax.random.normal(self.make_rng("params"), (self.n_in, self.n_features))
            ),
        ).value
        sizes = [2 * self.n_features] + [self.width] * self.depth + [self.n_out]
        names = [f"hidden_{i}" for i in range(self.depth)] + ["out"]
        params = {}
        for name, n_in, n_out in zip(names, sizes[:-1], sizes[1:], strict=True):
            kernel = nn.initializers.glorot_normal()
            params[f"{name}_kernel"] = self.param(f"{name}_kernel", kernel, (n_in, n_out))
            params[f"{name}_bias"] = self.param(f"{name}_bias", nn.initializers.zeros, (n_out,))
        return apply_jet(params, {"B": b}, x, self.activation, order, self.depth)


def matmul_precision() -> jax.lax.Precision | None:
    """Precision of the network's matmuls: float32 ("highest") unless the user has set
    ``jax_default_matmul_precision`` (e.g. ``jax.default_matmul_precision("TF32_TF32_F32_X3")``),
    which then applies (None defers to it; it is part of jit's cache key)."""
    return None if jax.config.jax_default_matmul_precision is not None else HIGHEST


def masked_jets(stack: jax.Array) -> bool:
    """Whether the jet layers use the masked one-expression form: small batches on a GPU
    (on a CPU it is slower: no kernel launches to save)."""
    return jax.default_backend() == "gpu" and stack.shape[1] <= MASKED_MAX_POINTS


def fused_first_layer() -> bool:
    """Whether the first layer's jet is :func:`fourier_affine_jet` (sin z and cos z once,
    the rows' scaling on W): on a CPU. On a GPU the features' jet rows then the layer, as
    measured there (:func:`fourier_jet`, :func:`affine_jet`)."""
    return jax.default_backend() == "cpu"


def _row(stack: jax.Array) -> jax.Array:
    """Row index of each jet row, broadcastable against ``stack``."""
    return jnp.arange(stack.shape[0])[:, None, None]


def affine_jet(stack: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    """Jet of a = h W + b: the bias enters the value row only."""
    out = jnp.einsum("knw,wv->knv", stack, w, precision=matmul_precision())
    if masked_jets(stack):
        return out + jnp.where(_row(stack) == 0, b[None, None, :], 0.0)
    return jnp.concatenate([out[:1] + b[None, None, :], out[1:]], axis=0)


def fourier_jet(x: jax.Array, bs: jax.Array, order: int) -> jax.Array:
    """Jet of gamma(x) = [sin z, cos z], z = x Bs: dz/dx_i = Bs[i], d_i d_j z = 0, so
    d_i d_j sin z = -sin z Bs[i] Bs[j] (cos likewise)."""
    z = jnp.dot(x, bs, precision=matmul_precision())
    s, c = jnp.sin(z), jnp.cos(z)
    rows = [jnp.concatenate([s, c], axis=-1)[None]]
    if order >= GRAD:
        rows.append(jnp.concatenate([c[None] * bs[:, None, :], -s[None] * bs[:, None, :]], -1))
    if order == LAP:
        norm = jnp.sum(bs**2, axis=0)[None, :]
        rows.append(jnp.concatenate([-s * norm, -c * norm], axis=-1)[None])
    if order == HESS:
        prod = jnp.stack([bs[i] * bs[j] for i, j in pairs(x.shape[-1])])[:, None, :]
        rows.append(jnp.concatenate([-s[None] * prod, -c[None] * prod], axis=-1))
    return jnp.concatenate(rows, axis=0)


def fourier_affine_jet(x: jax.Array, bs: jax.Array, w: jax.Array, b: jax.Array, order: int):
    """Jet of the first layer a = gamma(x) W + b, computed from sin z and cos z once
    (z = x Bs): each derivative row of gamma is [s, c] or [c, s] scaled by a row of Bs,
    so the scaling goes onto W, d_i a = [c, s] [Bs[i] W_sin; -Bs[i] W_cos] and
    d_i d_j a = -[s, c] (Bs[i] Bs[j] W). The same matmuls as :func:`fourier_jet` then
    :func:`affine_jet`; on a CPU, where XLA's fusions evaluated sin z and cos z again in
    every jet row that used them, about a fifth of a step less (docs/performance.md)."""
    f, p = bs.shape[-1], matmul_precision()
    z = jnp.dot(x, bs, precision=p)
    s, c = jnp.sin(z), jnp.cos(z)
    value, swapped = jnp.concatenate([s, c], -1), jnp.concatenate([c, s], -1)
    rows = [(jnp.dot(value, w, precision=p) + b[None, :])[None]]
    if order >= GRAD:
        w_grad = jnp.concatenate([bs[:, :, None] * w[None, :f], -bs[:, :, None] * w[None, f:]], 1)
        rows.append(jnp.einsum("nf,dfv->dnv", swapped, w_grad, precision=p))
    if order == LAP:
        norm = jnp.sum(bs**2, axis=0)
        rows.append(jnp.dot(value, -jnp.concatenate([norm, norm])[:, None] * w, precision=p)[None])
    if order == HESS:
        prod = jnp.stack([bs[i] * bs[j] for i, j in pairs(x.shape[-1])])
        prod = jnp.concatenate([prod, prod], -1)[:, :, None]
        rows.append(jnp.einsum("nf,pfv->pnv", value, -prod * w[None], precision=p))
    return jnp.concatenate(rows, axis=0)


def activation_jet(stack: jax.Array, activation: str, d: int, order: int) -> jax.Array:
    """Push a jet through tanh or sin: g' = phi' g, l' = phi' l + phi'' sum_i g_i^2,
    s'_ij = phi' s_ij + phi'' g_i g_j."""
    a = stack[0]
    if activation == "tanh":
        h = jnp.tanh(a)
        d1 = 1 - h**2
        d2 = -2 * h * d1
    elif activation == "sin":
        h, d1 = jnp.sin(a), jnp.cos(a)
        d2 = -h
    else:
        raise InputError(f"activation must be 'tanh' or 'sin'; got {activation!r}")
    g = stack[1 : 1 + d]
    lap = d1 * stack[1 + d] + d2 * jnp.sum(g**2, axis=0) if order == LAP else None
    if order in (GRAD, LAP) and masked_jets(stack):
        out = jnp.where(_row(stack) == 0, h[None], d1[None] * stack)
        return out if lap is None else jnp.where(_row(stack) == 1 + d, lap[None], out)
    rows = [h[None]]
    if order >= GRAD:
        rows.append(d1[None] * g)
    if lap is not None:
        rows.append(lap[None])
    if order == HESS:
        gg = jnp.stack([g[i] * g[j] for i, j in pairs(d)])
        rows.append(d1[None] * stack[1 + d :] + d2[None] * gg)
    return jnp.concatenate(rows, axis=0)


def split_jet(stack: jax.Array, d: int, order: int) -> Jet:
    """Split a jet stack (K, N, n) into value, gradient, Laplacian and (HESS) the full
    symmetric second derivatives (d, d, N, n), whose trace is the Laplacian."""
    grad = stack[1 : 1 + d] if order >= GRAD else None
    if order != HESS:
        return Jet(stack[0], grad, stack[1 + d] if order == LAP else None)
    rows = {p: stack[1 + d + k] for k, p in enumerate(pairs(d))}
    hess = jnp.stack([jnp.stack([rows[min(i, j), max(i, j)] for j in range(d)]) for i in range(d)])
    return Jet(stack[0], grad, sum(rows[i, i] for i in range(d)), hess)


def jet_rows(d: int, order: int) -> int:
    """Rows K of a jet stack of derivative ``order`` in d dimensions."""
    return (1, 1 + d, 2 + d, 1 + d + d * (d + 1) // 2)[order]


def apply_jet(params, consts, x: jax.Array, activation: str, order: int, depth: int) -> jax.Array:
    """The forward pass of a :class:`FourierMLP` of ``depth`` hidden layers at points x
    (N, d): its jet stack (K, N, n_out) of derivative ``order`` (VALUE .. HESS).

    gamma(x) = [sin(2 pi x B), cos(2 pi x B)]; h_0 = gamma, h_i = phi(h_(i-1) W_i + b_i),
    out = h_depth W_out + b_out; each layer carries the derivatives of its input
    (:func:`fourier_jet`, :func:`affine_jet`, :func:`activation_jet`; on a CPU the first
    two as one, :func:`fourier_affine_jet`)."""
    names = [f"hidden_{i}" for i in range(depth)] + ["out"]
    layers = [(params[f"{name}_kernel"], params[f"{name}_bias"]) for name in names]
    bs = 2 * jnp.pi * consts["B"]
    if fused_first_layer():
        stack = fourier_affine_jet(x, bs, *layers[0], order)
    else:
        stack = affine_jet(fourier_jet(x, bs, order), *layers[0])
    for w, b in layers[1:]:
        stack = affine_jet(activation_jet(stack, activation, x.shape[-1], order), w, b)
    return stack


def can_stack(params_a, consts_a, params_b, consts_b) -> bool:
    """Two networks stack when every array but the output layer has the same shape."""
    hidden = [k for k in params_a if not k.startswith("out")]
    return (
        set(params_a) == set(params_b)
        and consts_a["B"].shape == consts_b["B"].shape
        and all(params_a[k].shape == params_b[k].shape for k in hidden)
    )


def apply_pair(
    params,
    consts,
    x: jax.Array,
    activation: str,
    orders: tuple[int, int],
    depths: tuple[int, int],
    layout: str = "auto",
) -> tuple[jax.Array, jax.Array]:
    """Jet stacks of two networks (dicts ``params``/``consts`` keyed "u" and "mu", of
    ``depths`` hidden layers) at x.

    ``layout``: "separate" evaluates each network on its own (fewest FLOPs: the second
    carries only ``orders[1]``); "stacked" runs both as one network with a leading axis
    of 2 (one batched matmul per layer, about half the device ops, but the second
    network carries the higher order too and its output is zero-padded to the wider);
    "auto" stacks at most ``STACK_MAX_POINTS`` points, where a step is latency-bound.
    """
    pu, pm, cu, cm = params["u"], params["mu"], consts["u"], consts["mu"]
    if layout == "auto":
        small = x.shape[0] <= STACK_MAX_POINTS
        same_depth = depths[0] == depths[1]
        layout = "stacked" if small and same_depth and can_stack(pu, cu, pm, cm) else "separate"
    if layout == "separate":
        return (
            apply_jet(pu, cu, x, activation, orders[0], depths[0]),
            apply_jet(pm, cm, x, activation, orders[1], depths[1]),
        )
    if layout != "stacked":
        raise InputError(f"layout must be 'auto', 'separate' or 'stacked'; got {layout!r}")
    n_u, n_mu = pu["out_bias"].shape[0], pm["out_bias"].shape[0]
    n_out = max(n_u, n_mu)

    def padded(p):
        extra = n_out - p["out_bias"].shape[0]
        return {
            **p,
            "out_kernel": jnp.pad(p["out_kernel"], ((0, 0), (0, extra))),
            "out_bias": jnp.pad(p["out_bias"], (0, extra)),
        }

    both_p = jax.tree.map(lambda a, b: jnp.stack([a, b]), padded(pu), padded(pm))
    both_c = jax.tree.map(lambda a, b: jnp.stack([a, b]), cu, cm)
    order = max(orders)
    both = jax.vmap(lambda p, c: apply_jet(p, c, x, activation, order, depths[0]))(both_p, both_c)
    d = x.shape[-1]
    return (both[0, : jet_rows(d, orders[0]), :, :n_u], both[1, : jet_rows(d, orders[1]), :, :n_mu])
