"""Springpot (power law), between a spring (alpha = 0) and a dashpot (alpha = 1):

    mu = mu_0 (i omega / omega_0)^alpha      (mu_0 Pa, 0 < alpha < 1, omega_0 = 2 pi f_0)

so G' and G'' grow as f^alpha at the constant phase angle alpha pi / 2
(G'' / G' = tan(alpha pi / 2)) and |mu| = mu_0 (f / f_0)^alpha.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from helmholtz_pinn.laws import Law, Map
from helmholtz_pinn.laws._channels import ETA_SCALE, SOFTPLUS_ONE

# the exponent at zero network output: the damping ratio tan(alpha pi / 2) of a fit's
# start equals ETA_SCALE, as for the other laws
ALPHA_START = float(2 / np.pi * np.arctan(ETA_SCALE))
ALPHA_OFFSET = float(np.log(ALPHA_START / (1 - ALPHA_START)))  # sigmoid(ALPHA_OFFSET)


class Springpot(NamedTuple):
    """``modulus`` mu_0 Pa (|mu| at f_0), ``alpha`` in (0, 1), ``reference_frequency``
    f_0 Hz."""

    modulus: float
    alpha: float
    reference_frequency: float = 50.0


def from_storage(storage: float, alpha: float, reference_frequency: float = 50.0) -> Springpot:
    """The springpot whose G' at ``reference_frequency`` Hz is ``storage`` Pa:
    mu_0 = storage / cos(alpha pi / 2)."""
    if isinstance(alpha, float | int):
        return Springpot(storage / math.cos(alpha * math.pi / 2), alpha, reference_frequency)
    return Springpot(storage / np.cos(alpha * np.pi / 2), alpha, reference_frequency)


def modulus(p: Springpot, f: np.ndarray) -> np.ndarray:
    """mu = mu_0 (i f / f_0)^alpha (Pa) at ``f`` Hz."""
    return p.modulus * (1j * f / p.reference_frequency) ** p.alpha


def valid(p: Springpot) -> bool:
    alpha = np.asarray(p.alpha)
    positive = np.all(np.asarray(p.modulus) > 0) and p.reference_frequency > 0
    return bool(positive and np.all((alpha > 0) & (alpha < 1)))


def network(value, grad, omega_ratio):
    """mu' = kappa (omega_f / omega_max)^alpha exp(i alpha pi / 2) (N, F) from channels
    (o_0, o_1): kappa = softplus(o_0 + c) > 0 (|mu'| at the highest frequency) and
    alpha = sigmoid(o_1 + ALPHA_OFFSET) in (0, 1), so G'' = |mu'| sin(alpha pi / 2) > 0.
    Its gradient (d, N, F): with z_f = ln(omega_f / omega_max) + i pi / 2,
    grad mu' = mu' (sigmoid(o_0 + c) / kappa grad o_0 + alpha (1 - alpha) z_f grad o_1).
    """
    import jax
    import jax.numpy as jnp

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


def read(mu: np.ndarray, omega: np.ndarray) -> dict:
    """alpha = 2 arg(mu) / pi at the highest frequency (the same at every frequency for
    a springpot fit)."""
    return {"alpha": np.angle(mu[int(np.argmax(omega))]) * 2 / np.pi}


LAW = Law(
    name="springpot",
    equation="mu = mu_0 (i omega / omega_0)^alpha",
    channels=lambda n_freq: 2,
    network=network,
    parameters=Springpot,
    modulus=modulus,
    valid=valid,
    requires="modulus > 0 Pa, alpha in (0, 1) and reference_frequency > 0 Hz",
    maps={"alpha": Map("alpha", "1", "1")},
    read=read,
    auto=0,
)
