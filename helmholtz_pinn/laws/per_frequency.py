"""An independent complex modulus per frequency: no law ties the frequencies,

    mu_f = G'_f + i G''_f        (Pa, one pair per frequency)

so a fit has no law spread and nothing to read off it but the moduli.
"""

from __future__ import annotations

from helmholtz_pinn.laws import Law
from helmholtz_pinn.laws._channels import storage_loss


def network(value, grad, omega_ratio):
    """mu'_f = G'_f + i G''_f (N, F) from channel pairs (o_2f, o_2f+1), as the Voigt
    solid's with a loss weight of 1 (:mod:`._channels`)."""
    import jax.numpy as jnp

    g = (None, None) if grad is None else (grad[..., 0::2], grad[..., 1::2])
    return storage_loss(value[..., 0::2], value[..., 1::2], *g, jnp.ones_like(omega_ratio)[None, :])


LAW = Law(
    name="per-frequency",
    equation="mu_f = G'_f + i G''_f at each frequency f",
    channels=lambda n_freq: 2 * n_freq,
    network=network,
    spread=False,
)
