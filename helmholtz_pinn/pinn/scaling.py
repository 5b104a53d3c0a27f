"""Nondimensional variables and the network outputs as physical fields.

Physical problem in SI units (mu in Pa, rho in kg/m^3, omega in rad/s, x in m); the
residual forms themselves are plug-ins in :mod:`helmholtz_pinn.pinn.forms`, the modulus
of each viscoelastic law in :mod:`helmholtz_pinn.laws`.
Scaling: x = L x', mu = mu_ref mu', u = s u' (s per frequency and component), and
kappa_f = rho omega_f^2 L^2 / mu_ref, so that e.g. mu Lap u + rho omega^2 u = 0 reads
mu' Lap' u' / kappa_f + u' = 0 with every term O(1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Scales(NamedTuple):
    """Nondimensionalisation: length L (m), modulus mu_ref (Pa), kappa (F,), omega_ratio (F,).

    ``omega_ratio`` = omega_f / omega_max enters a law's network modulus
    (:mod:`helmholtz_pinn.laws`).
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


def laplacian_reference(fn, x: jax.Array) -> jax.Array:
    """Lap fn at points x (N, d) as the trace of ``jax.hessian``; fn maps (d,) -> (n,).

    The slow, obviously-correct path the forward-Laplacian propagation is tested against.
    """
    hess = jax.vmap(jax.hessian(fn))(x)
    return jnp.trace(hess, axis1=-2, axis2=-1)
