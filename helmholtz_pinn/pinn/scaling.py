"""Nondimensional variables and the network outputs as physical fields.

Physical problem in SI units (mu in Pa, rho in kg/m^3, omega in rad/s, x in m); the
residual forms themselves are plug-ins in :mod:`helmholtz_pinn.pinn.forms`.
Scaling: x = L x', mu = mu_ref mu', u = s u' (s per frequency and component), and
kappa_f = rho omega_f^2 L^2 / mu_ref, so that e.g. mu Lap u + rho omega^2 u = 0 reads
mu' Lap' u' / kappa_f + u' = 0 with every term O(1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

SOFTPLUS_ONE = float(np.log(np.e - 1.0))  # softplus(SOFTPLUS_ONE) = 1
ETA_SCALE = 0.1  # output scale of the loss-modulus channel (initial damping ratio ~0.1)


class Scales(NamedTuple):
    """Nondimensionalisation: length L (m), modulus mu_ref (Pa), kappa (F,), omega_ratio (F,).

    ``omega_ratio`` = omega_f / omega_max enters the Voigt model mu' = G' + i omega_ratio eta'.
    """

    length: float
    mu_ref: float
    kappa: np.ndarray
    omega_ratio: np.ndarray


def make_scales(frequency: np.ndarray, length: float, mu_ref: float, rho: float) -> Scales:
    """kappa_f = rho (2 pi f)^2 L^2 / mu_ref for frequencies in Hz, L in m, mu_ref in Pa."""
    omega = 2 * np.pi * np.asarray(frequency, dtype=np.float64)
    kappa = rho * omega**2 * length**2 / mu_ref
    return Scales(float(length), float(mu_ref), kappa, omega / omega.max())


def u_complex(channels: jax.Array, n_freq: int, n_comp: int) -> jax.Array:
    """Network channels (..., 2 F C) -> complex (..., F, C): pairs are (Re, Im)."""
    pairs = channels.reshape(channels.shape[:-1] + (n_freq, n_comp, 2))
    return jax.lax.complex(pairs[..., 0], pairs[..., 1])


# springpot exponent at zero network output: the damping ratio tan(alpha pi / 2) of a
# fit's start equals ETA_SCALE, as for the other models
ALPHA_START = float(2 / np.pi * np.arctan(ETA_SCALE))
ALPHA_OFFSET = float(np.log(ALPHA_START / (1 - ALPHA_START)))  # sigmoid(ALPHA_OFFSET)


# dashpot of the springpot-dashpot law at zero network output: a damping ratio of
# DASHPOT_START ETA_SCALE at the highest frequency, beside the springpot's own
DASHPOT_START = 0.1
DASHPOT_OFFSET = float(np.log(np.expm1(DASHPOT_START)))  # softplus(DASHPOT_OFFSET)


def mu_channels(n_freq: int, mu_model: str) -> int:
    """Outputs of the mu-network: (G', eta) for Voigt, (kappa, alpha) for the springpot,
    (kappa, alpha, eta) for the springpot-dashpot, (Re, Im) per frequency otherwise."""
    return {"voigt": 2, "springpot": 2, "springpot-dashpot": 3}.get(mu_model, 2 * n_freq)


def springpot(
    value: jax.Array, grad: jax.Array | None, omega_ratio: jax.Array
) -> tuple[jax.Array, jax.Array | None]:
    """Springpot (power law) mu' = kappa (omega_f / omega_max)^alpha exp(i alpha pi / 2)
    (N, F), with kappa = softplus(o_0 + c) > 0 (|mu'| at the highest frequency) and
    alpha = sigmoid(o_1 + ALPHA_OFFSET) in (0, 1), so G'' = |mu'| sin(alpha pi / 2) > 0.
    Its gradient (d, N, F): with z_f = ln(omega_f / omega_max) + i pi / 2,
    grad mu' = mu' (sigmoid(o_0 + c) / kappa grad o_0 + alpha (1 - alpha) z_f grad o_1).
    """
    o_k, o_a = value[..., :1], value[..., 1:2]
    kappa = jax.nn.softplus(o_k + SOFTPLUS_ONE)
    alpha = jax.nn.sigmoid(o_a + ALPHA_OFFSET)
    z = jax.lax.complex(jnp.log(omega_ratio), jnp.full_like(omega_ratio, jnp.pi / 2))[None]
    mu = kappa * jnp.exp(alpha * z)
    if grad is None:
        return mu, None
    d_k = jax.nn.sigmoid(o_k + SOFTPLUS_ONE) / kappa  # d ln kappa / d o_0
    d_a = alpha * (1 - alpha)  # d alpha / d o_1
    g = d_k[None] * grad[..., :1] + d_a[None] * z[None] * grad[..., 1:2]
    return mu, mu[None] * g


def springpot_dashpot(
    value: jax.Array, grad: jax.Array | None, omega_ratio: jax.Array
) -> tuple[jax.Array, jax.Array | None]:
    """A springpot in parallel with a dashpot, mu' = kappa (i omega_f / omega_max)^alpha
    + i (omega_f / omega_max) eta' (N, F): the springpot of channels 0-1
    (:func:`springpot`) plus eta' = ETA_SCALE softplus(o_2 + DASHPOT_OFFSET) >= 0. It holds
    both laws: eta' = 0 is the springpot, alpha -> 0 the Voigt solid (G' constant, G''
    proportional to omega). grad of the dashpot: i r_f ETA_SCALE sigmoid(.) grad o_2."""
    mu, g = springpot(value[..., :2], None if grad is None else grad[..., :2], omega_ratio)
    o_d = value[..., 2:3] + DASHPOT_OFFSET
    im = ETA_SCALE * omega_ratio[None, :] * jax.nn.softplus(o_d)
    mu = mu + jax.lax.complex(jnp.zeros_like(im), im)
    if grad is None:
        return mu, None
    g_im = ETA_SCALE * omega_ratio[None, None, :] * jax.nn.sigmoid(o_d)[None] * grad[..., 2:3]
    return mu, g + jax.lax.complex(jnp.zeros_like(g_im), g_im)


def mu_complex(
    value: jax.Array, grad: jax.Array | None, omega_ratio: jax.Array, mu_model: str
) -> tuple[jax.Array, jax.Array | None]:
    """mu' (N, F) and grad mu' (d, N, F) from mu-network channels and their gradient
    (``mu_model`` "voigt", "per-frequency", "springpot" (:func:`springpot`) or
    "springpot-dashpot" (:func:`springpot_dashpot`)).

    Storage modulus G' = softplus(o_0 + c) > 0 and loss modulus
    G'' = ETA_SCALE softplus(o_1 + c) >= 0 (passive tissue dissipates; Voigt: times
    omega_f / omega_max); c makes softplus 1 at o = 0, so a fit starts at G' ~ mu_ref
    and a damping ratio ~ ETA_SCALE.
    """
    if mu_model == "springpot":
        return springpot(value, grad, omega_ratio)
    if mu_model == "springpot-dashpot":
        return springpot_dashpot(value, grad, omega_ratio)
    n_freq = omega_ratio.shape[0]
    if mu_model == "voigt":
        o_re, o_im = value[..., :1], value[..., 1:2]
        weight = omega_ratio[None, :]  # G'' = omega eta: scales with frequency
    else:
        o_re, o_im = value[..., 0::2], value[..., 1::2]
        weight = jnp.ones_like(omega_ratio)[None, :]
    shape = value.shape[:-1] + (n_freq,)
    re = jnp.broadcast_to(jax.nn.softplus(o_re + SOFTPLUS_ONE), shape)
    im = ETA_SCALE * weight * jax.nn.softplus(o_im + SOFTPLUS_ONE)
    mu = jax.lax.complex(re, im)
    if grad is None:
        return mu, None
    g_o_re, g_o_im = (
        (grad[..., :1], grad[..., 1:2])
        if mu_model == "voigt"
        else (
            grad[..., 0::2],
            grad[..., 1::2],
        )
    )
    g_shape = grad.shape[:-1] + (n_freq,)
    g_re = jnp.broadcast_to(jax.nn.sigmoid(o_re + SOFTPLUS_ONE)[None] * g_o_re, g_shape)
    g_im = ETA_SCALE * weight[None] * jax.nn.sigmoid(o_im + SOFTPLUS_ONE)[None] * g_o_im
    return mu, jax.lax.complex(g_re, g_im)


def laplacian_reference(fn, x: jax.Array) -> jax.Array:
    """Lap fn at points x (N, d) as the trace of ``jax.hessian``; fn maps (d,) -> (n,).

    The slow, obviously-correct path the forward-Laplacian propagation is tested against.
    """
    hess = jax.vmap(jax.hessian(fn))(x)
    return jnp.trace(hess, axis1=-2, axis2=-1)
