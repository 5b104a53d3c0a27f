"""Nondimensional variables and the network outputs as physical fields.

Physical problem in SI units (mu in Pa, rho in kg/m^3, omega in rad/s, x in m); the
residual forms themselves are plug-ins in :mod:`helmholtz_pinn.forms`.
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


def mu_channels(n_freq: int, mu_model: str) -> int:
    """Outputs of the mu-network: (G', eta) for Voigt, (Re, Im) per frequency otherwise."""
    return 2 if mu_model == "voigt" else 2 * n_freq


def mu_complex(
    value: jax.Array, grad: jax.Array | None, omega_ratio: jax.Array, mu_model: str
) -> tuple[jax.Array, jax.Array | None]:
    """mu' (N, F) and grad mu' (d, N, F) from mu-network channels and their gradient.

    Storage modulus G' = softplus(o_0 + c) > 0 (c makes the initial value ~1, i.e.
    mu_ref); loss modulus G'' = ETA_SCALE o_1 (Voigt: times omega_f / omega_max).
    """
    n_freq = omega_ratio.shape[0]
    if mu_model == "voigt":
        re = jnp.broadcast_to(value[..., :1], value.shape[:-1] + (n_freq,))
        im = value[..., 1:2] * omega_ratio[None, :]
        sig = jax.nn.sigmoid(value[..., :1] + SOFTPLUS_ONE)
        mu = jax.lax.complex(jax.nn.softplus(re + SOFTPLUS_ONE), ETA_SCALE * im)
        if grad is None:
            return mu, None
        g_re = jnp.broadcast_to(sig[None] * grad[..., :1], grad.shape[:-1] + (n_freq,))
        g_im = ETA_SCALE * grad[..., 1:2] * omega_ratio[None, None, :]
        return mu, jax.lax.complex(g_re, g_im)
    re, im = value[..., 0::2], value[..., 1::2]
    mu = jax.lax.complex(jax.nn.softplus(re + SOFTPLUS_ONE), ETA_SCALE * im)
    if grad is None:
        return mu, None
    sig = jax.nn.sigmoid(re + SOFTPLUS_ONE)
    return mu, jax.lax.complex(sig[None] * grad[..., 0::2], ETA_SCALE * grad[..., 1::2])


def laplacian_reference(fn, x: jax.Array) -> jax.Array:
    """Lap fn at points x (N, d) as the trace of ``jax.hessian``; fn maps (d,) -> (n,).

    The slow, obviously-correct path the forward-Laplacian propagation is tested against.
    """
    hess = jax.vmap(jax.hessian(fn))(x)
    return jnp.trace(hess, axis1=-2, axis2=-1)
