"""Fused Pallas (Triton) kernels for the MLP body of a forward-Laplacian jet.

``mlp_jet`` computes what ``model.apply_jet`` computes after the Fourier features: for
hidden layers l = 0..L-1 and jet rows k (value, d gradient rows, Laplacian row)
    z_k = h_k W_l (+ b_l on the value row),
    y_0 = phi(z_0),  y_i = phi'(z_0) z_i,  y_lap = phi'(z_0) z_lap + phi''(z_0) sum_i z_i^2,
then the output layer out_k = y_k W_out (+ b_out on the value row); all layers run in
one forward kernel per tile of ``block_n`` points, and the weight gradients in one
backward kernel (``jax.custom_vjp``). The backward walks the layers top-down; with
adjoints Y of a hidden layer's outputs, s_j = phi^(j)(z_0):
    dz_0 = s1 Y_0 + s2 sum_i Y_i z_i + Y_lap (s2 z_lap + s3 sum_i z_i^2),
    dz_i = s1 Y_i + 2 s2 Y_lap z_i,   dz_lap = s1 Y_lap,
    dW_l = sum_k h_k^T dz_k,  db_l = colsum(dz_0),  adjoint of h_k = dz_k W_l^T.
Each tile writes partial dW, db; XLA sums them over tiles. The Fourier stack gets a
zero cotangent (it depends on no trainable parameter).

Triton constraints, met by padding outside the kernels: tiles are 2-D with power-of-two
sizes and every dot dimension >= 16, so N is zero-padded to a multiple of ``block_n``
and every width to a power of two >= 16 (padded units stay 0 since phi(0) = 0 for tanh
and sin; padded points get a zero output cotangent, so they add nothing to dW, db).
Off the GPU the kernels run in Pallas interpret mode, so the CPU tests check them.

An experiment, not part of the library: measured on one H200 (docs/performance.md,
``scripts/kernel_check.py``) it was slower than XLA's path at every size, and its TF32x3
variant computed wrong values at 16-point tiles, so the library does not use it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from helmholtz_pinn.model import fourier_jet, jet_rows

MIN_DIM = 16  # Triton's dot needs every dimension >= 16 (and powers of two for tiles)
PRECISIONS = {
    "highest": jax.lax.DotAlgorithmPreset.F32_F32_F32,  # Triton IEEE fp32
    "tf32x3": jax.lax.DotAlgorithmPreset.TF32_TF32_F32_X3,  # three TF32 tensor-core passes
}
ACTIVATIONS = ("tanh", "sin")


@dataclasses.dataclass(frozen=True)
class _Config:
    """Static settings of one fused call (hashable: a nondiff argument of custom_vjp)."""

    activation: str
    d: int
    order: int
    block_n: int
    precision: Any  # a DotAlgorithmPreset, or Precision.HIGHEST where the CPU lacks the preset
    interpret: bool
    num_warps: int

    @property
    def rows(self) -> int:
        return jet_rows(self.d, self.order)


def default_block_n(n: int) -> int:
    """Points per tile: 16 up to 2048 points, 32 up to 16384, else 64."""
    return 16 if n <= 2048 else 32 if n <= 16384 else 64


def _padded_dim(n: int) -> int:
    """Smallest power of two >= max(n, 16): Triton tiles are powers of two, dots >= 16."""
    return max(MIN_DIM, 1 << (n - 1).bit_length())


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _dot_precision(precision: str, interpret: bool):
    """The dot algorithm for ``precision``; interpret mode on CPU runs TF32x3 as fp32."""
    preset = PRECISIONS[precision]
    cpu_lacks_preset = preset is not PRECISIONS["highest"] and jax.default_backend() == "cpu"
    return jax.lax.Precision.HIGHEST if interpret and cpu_lacks_preset else preset


def _compiler_params(num_warps: int):
    """Triton compiler parameters (the class moved between jax versions)."""
    try:
        from jax.experimental.pallas import triton as pltriton

        cls = getattr(pltriton, "CompilerParams", None) or pltriton.TritonCompilerParams
    except (ImportError, AttributeError):
        from jax.experimental.pallas import gpu as plgpu

        cls = plgpu.TritonCompilerParams
    return cls(num_warps=num_warps, num_stages=1)


# ---- jet algebra on lists of 2-D tiles (one (block_n, width) tile per jet row) ----


def _dot(a: jax.Array, b: jax.Array, precision, contract: tuple[int, int] = (1, 0)) -> jax.Array:
    """2-D matmul contracting a's axis ``contract[0]`` with b's ``contract[1]`` (fp32 out)."""
    dims = (((contract[0],), (contract[1],)), ((), ()))
    return jax.lax.dot_general(a, b, dims, precision=precision, preferred_element_type=jnp.float32)


def _phi_derivs(z0: jax.Array, activation: str) -> tuple[jax.Array, ...]:
    """phi(z0), phi', phi'', phi''' for tanh (t, 1 - t^2, -2 t s1, -2 (s1^2 + t s2)) or sin."""
    if activation == "tanh":
        t = jnp.tanh(z0)
        s1 = 1.0 - t * t
        s2 = -2.0 * t * s1
        return t, s1, s2, -2.0 * (s1 * s1 + t * s2)
    s, c = jnp.sin(z0), jnp.cos(z0)
    return s, c, -s, -c


def _sum_squares(rows: list[jax.Array]) -> jax.Array:
    """sum_i g_i^2 over the gradient rows."""
    return functools.reduce(jnp.add, [g * g for g in rows])


def _affine(h: list[jax.Array], w: jax.Array, b: jax.Array, precision) -> list[jax.Array]:
    """z_k = h_k W, plus the bias (1, width) on the value row only."""
    z = [_dot(hk, w, precision) for hk in h]
    return [z[0] + b, *z[1:]]


def _activate(z: list[jax.Array], derivs, d: int, order: int) -> list[jax.Array]:
    """y_0 = phi, y_i = s1 z_i, y_lap = s1 z_lap + s2 sum_i z_i^2."""
    phi, s1, s2, _ = derivs
    y = [phi]
    if order >= 1:
        y += [s1 * zi for zi in z[1 : 1 + d]]
    if order >= 2:
        y.append(s1 * z[1 + d] + s2 * _sum_squares(z[1 : 1 + d]))
    return y


def _activate_adjoint(
    z: list[jax.Array], adj: list[jax.Array], derivs, d: int, order: int
) -> list[jax.Array]:
    """Adjoints dz of the pre-activation jet from those of y (module docstring)."""
    _, s1, s2, s3 = derivs
    dz0 = s1 * adj[0]
    grads = []
    if order >= 1:
        zg, yg = z[1 : 1 + d], adj[1 : 1 + d]
        dz0 = dz0 + s2 * functools.reduce(jnp.add, [a * g for a, g in zip(yg, zg, strict=True)])
        grads = [s1 * a for a in yg]
    if order < 2:
        return [dz0, *grads]
    ylap, zlap = adj[1 + d], z[1 + d]
    dz0 = dz0 + ylap * (s2 * zlap + s3 * _sum_squares(zg))
    two_s2_ylap = 2.0 * s2 * ylap
    grads = [gi + two_s2_ylap * zi for gi, zi in zip(grads, zg, strict=True)]
    return [dz0, *grads, s1 * ylap]


# ---- kernels ----


def _forward_kernel(cfg: _Config, n_hidden: int):
    """Kernel refs: stack, W_0..W_L, b_0..b_L -> out, z_0..z_{L-1} (pre-activation jets)."""
    n_layers = n_hidden + 1

    def kernel(x_ref, *refs):
        w_refs, b_refs = refs[:n_layers], refs[n_layers : 2 * n_layers]
        out_ref, z_refs = refs[2 * n_layers], refs[2 * n_layers + 1 :]
        h = [x_ref[k] for k in range(cfg.rows)]
        for layer in range(n_hidden):
            z = _affine(h, w_refs[layer][...], b_refs[layer][...], cfg.precision)
            for k, zk in enumerate(z):
                z_refs[layer][k] = zk
            h = _activate(z, _phi_derivs(z[0], cfg.activation), cfg.d, cfg.order)
        out = _affine(h, w_refs[n_hidden][...], b_refs[n_hidden][...], cfg.precision)
        for k, ok in enumerate(out):
            out_ref[k] = ok

    return kernel


def _backward_kernel(cfg: _Config, n_hidden: int):
    """Kernel refs: stack, W_1..W_L, z_0..z_{L-1}, g -> partial dW_0..dW_L, db_0..db_L."""
    n_layers = n_hidden + 1

    def kernel(x_ref, *refs):
        w_refs = (None, *refs[:n_hidden])  # W_0 is not needed (no adjoint of the stack)
        z_refs, g_ref = refs[n_hidden : 2 * n_hidden], refs[2 * n_hidden]
        dw_refs = refs[2 * n_hidden + 1 : 2 * n_hidden + 1 + n_layers]
        db_refs = refs[2 * n_hidden + 1 + n_layers :]
        adj = [g_ref[k] for k in range(cfg.rows)]
        z = derivs = None
        for layer in reversed(range(n_layers)):
            if layer < n_hidden:  # through the activation of this hidden layer
                adj = _activate_adjoint(z, adj, derivs, cfg.d, cfg.order)
            if layer > 0:  # this layer's input: the previous layer's activated jet
                z = [z_refs[layer - 1][k] for k in range(cfg.rows)]
                derivs = _phi_derivs(z[0], cfg.activation)
                h = _activate(z, derivs, cfg.d, cfg.order)
            else:
                h = [x_ref[k] for k in range(cfg.rows)]
            dw = functools.reduce(
                jnp.add,
                [_dot(hk, ak, cfg.precision, (0, 0)) for hk, ak in zip(h, adj, strict=True)],
            )
            dw_refs[layer][...] = dw
            db_refs[layer][...] = jnp.sum(adj[0], axis=0, keepdims=True)
            if layer > 0:
                w = w_refs[layer][...]
                adj = [_dot(ak, w, cfg.precision, (1, 1)) for ak in adj]

    return kernel


def _full_spec(shape: tuple[int, ...]) -> pl.BlockSpec:
    """The whole array in every program (weights and biases)."""
    return pl.BlockSpec(shape, lambda i: (0,) * len(shape))


def _tile_spec(rows: int, block_n: int, width: int) -> pl.BlockSpec:
    """Tile i of a jet stack (K, N, width): all rows, points i*block_n ... (i+1)*block_n."""
    return pl.BlockSpec((rows, block_n, width), lambda i: (0, i, 0))


def _call(cfg: _Config, kernel, out_shape, grid: int, in_specs, out_specs, name: str):
    extra = {} if cfg.interpret else {"compiler_params": _compiler_params(cfg.num_warps)}
    return pl.pallas_call(
        kernel,
        out_shape=out_shape,
        grid=(grid,),
        in_specs=in_specs,
        out_specs=out_specs,
        interpret=cfg.interpret,
        name=name,
        **extra,
    )


def _forward_call(cfg: _Config, stack, weights, biases):
    """(out (K, N, n_out), [z_l (K, N, width_l)]) on padded arrays."""
    k_rows, n, f_in = stack.shape
    n_hidden = len(weights) - 1
    widths = [w.shape[1] for w in weights]
    out_shape = [jax.ShapeDtypeStruct((k_rows, n, c), jnp.float32) for c in widths]
    out_shape = (out_shape[-1], *out_shape[:-1])
    tiles = [_tile_spec(k_rows, cfg.block_n, c) for c in widths]
    call = _call(
        cfg,
        _forward_kernel(cfg, n_hidden),
        out_shape,
        n // cfg.block_n,
        [_tile_spec(k_rows, cfg.block_n, f_in)]
        + [_full_spec(w.shape) for w in weights]
        + [_full_spec(b.shape) for b in biases],
        (tiles[-1], *tiles[:-1]),
        "mlp_jet_forward",
    )
    out, *zs = call(stack, *weights, *biases)
    return out, tuple(zs)


def _backward_call(cfg: _Config, stack, weights, zs, g):
    """Weight and bias gradients (summed over tiles) from the saved pre-activation jets."""
    k_rows, n, f_in = stack.shape
    n_tiles, n_hidden = n // cfg.block_n, len(weights) - 1
    shapes = [w.shape for w in weights]
    out_shape = [jax.ShapeDtypeStruct((n_tiles, *s), jnp.float32) for s in shapes]
    out_shape += [jax.ShapeDtypeStruct((n_tiles, 1, s[1]), jnp.float32) for s in shapes]
    out_specs = [pl.BlockSpec((None, *s), lambda i: (i, 0, 0)) for s in shapes]
    out_specs += [pl.BlockSpec((None, 1, s[1]), lambda i: (i, 0, 0)) for s in shapes]
    call = _call(
        cfg,
        _backward_kernel(cfg, n_hidden),
        out_shape,
        n_tiles,
        [_tile_spec(k_rows, cfg.block_n, f_in)]
        + [_full_spec(w.shape) for w in weights[1:]]
        + [_tile_spec(k_rows, cfg.block_n, z.shape[-1]) for z in zs]
        + [_tile_spec(k_rows, cfg.block_n, g.shape[-1])],
        out_specs,
        "mlp_jet_backward",
    )
    parts = call(stack, *weights[1:], *zs, g)
    sums = [jnp.sum(p, axis=0) for p in parts]
    return tuple(sums[: n_hidden + 1]), tuple(sums[n_hidden + 1 :])


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _fused(cfg: _Config, stack, weights, biases):
    return _forward_call(cfg, stack, weights, biases)[0]


def _fused_fwd(cfg: _Config, stack, weights, biases):
    out, zs = _forward_call(cfg, stack, weights, biases)
    return out, (stack, weights, zs)


def _fused_bwd(cfg: _Config, residuals, g):
    stack, weights, zs = residuals
    dws, dbs = _backward_call(cfg, stack, weights, zs, g)
    return jnp.zeros_like(stack), dws, dbs  # the Fourier stack gets no gradient


_fused.defvjp(_fused_fwd, _fused_bwd)


# ---- public API ----


def _check(stack, weights, biases, activation, d, order, block_n, precision) -> None:
    """Eager checks at the API boundary (shapes here are per network under vmap)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be 'tanh' or 'sin'; got {activation!r}")
    if order not in (0, 1, 2):
        raise ValueError(f"order must be 0, 1 or 2; got {order!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}; got {precision!r}")
    if block_n is not None and (block_n < MIN_DIM or not _is_power_of_two(block_n)):
        raise ValueError(f"block_n must be a power of two >= {MIN_DIM}; got {block_n}")
    k_rows = jet_rows(d, order)
    if stack.ndim != 3 or stack.shape[0] != k_rows or stack.dtype != jnp.float32:
        raise ValueError(
            f"stack must be float32 with shape ({k_rows}, N, F_in) for d={d}, order={order}; "
            f"got {stack.dtype} {stack.shape}"
        )
    if len(weights) != len(biases) or not weights:
        raise ValueError(
            f"need matching non-empty weights and biases; got {len(weights)} and {len(biases)}"
        )
    fan_in = stack.shape[-1]
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if w.ndim != 2 or w.shape[0] != fan_in or b.shape != (w.shape[1],):
            raise ValueError(
                f"layer {i}: kernel must be ({fan_in}, width) and bias (width,); "
                f"got {w.shape} and {b.shape}"
            )
        fan_in = w.shape[1]


def mlp_jet(
    stack: jax.Array,
    weights: Sequence[jax.Array],
    biases: Sequence[jax.Array],
    *,
    activation: str = "tanh",
    d: int,
    order: int,
    block_n: int | None = None,
    precision: str = "highest",
    interpret: bool | None = None,
    num_warps: int = 4,
) -> jax.Array:
    """Jet (K, N, n_out) of the MLP body applied to a Fourier jet ``stack`` (K, N, F_in).

    Same math as the layer loop of ``model.apply_jet``: hidden layers (``weights[:-1]``,
    ``biases[:-1]``) are affine + ``activation`` jets, the last layer is affine only;
    K = ``jet_rows(d, order)``. One fused Pallas kernel forward, one backward.

    Gradients are exact for ``weights`` and ``biases``; ``stack`` gets a ZERO cotangent
    (the Fourier features do not depend on trainable parameters), so do not differentiate
    through ``stack`` with this function.

    ``block_n``: points per program (power of two >= 16; default ``default_block_n(N)``).
    ``precision``: "highest" (fp32 dots, ``DotAlgorithmPreset.F32_F32_F32``) or "tf32x3"
    (``TF32_TF32_F32_X3``; runs as fp32 in interpret mode on CPU). ``interpret``: Pallas
    interpret mode; default on unless the default backend is a GPU. ``num_warps``: Triton
    warps per program. N is zero-padded to a multiple of ``block_n`` and every width to a
    power of two >= 16 (padded units stay zero since phi(0) = 0), then sliced back.
    """
    weights, biases = tuple(weights), tuple(biases)
    _check(stack, weights, biases, activation, d, order, block_n, precision)
    interpret = jax.default_backend() != "gpu" if interpret is None else bool(interpret)
    n, n_out = stack.shape[1], weights[-1].shape[1]
    block_n = block_n or default_block_n(n)
    cfg = _Config(
        activation,
        d,
        order,
        block_n,
        _dot_precision(precision, interpret),
        interpret,
        num_warps,
    )
    dims = [stack.shape[-1]] + [w.shape[1] for w in weights]
    padded = [_padded_dim(c) for c in dims]
    n_pad = -(-n // block_n) * block_n
    stack_p = jnp.pad(stack, ((0, 0), (0, n_pad - n), (0, padded[0] - dims[0])))
    weights_p = tuple(
        jnp.pad(w, ((0, padded[i] - dims[i]), (0, padded[i + 1] - dims[i + 1])))
        for i, w in enumerate(weights)
    )
    biases_p = tuple(
        jnp.pad(b, (0, padded[i + 1] - dims[i + 1]))[None, :] for i, b in enumerate(biases)
    )
    return _fused(cfg, stack_p, weights_p, biases_p)[:, :n, :n_out]


def apply_jet_fused(params, consts, x: jax.Array, activation: str, order: int, **kw) -> jax.Array:
    """``model.apply_jet`` with the MLP body in the fused kernels (``mlp_jet``; ``kw`` go there).

    The Fourier jet is computed by XLA; no gradient reaches ``x`` or ``consts``.
    """
    depth = sum(name.startswith("hidden_") and name.endswith("_kernel") for name in params)
    stack = fourier_jet(x, 2 * jnp.pi * consts["B"], order)
    names = [f"hidden_{i}" for i in range(depth)] + ["out"]
    weights = tuple(params[f"{name}_kernel"] for name in names)
    biases = tuple(params[f"{name}_bias"] for name in names)
    return mlp_jet(stack, weights, biases, activation=activation, d=x.shape[-1], order=order, **kw)
