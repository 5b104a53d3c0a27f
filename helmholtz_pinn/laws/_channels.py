"""The channel transforms the laws share: a storage and a loss modulus from two channels.

G' = softplus(o_re + c) > 0 and G'' = ETA_SCALE w_f softplus(o_im + c) >= 0 (passive
tissue dissipates), c = SOFTPLUS_ONE making softplus 1 at o = 0, so that a fit starts at
G' ~ mu_ref and a damping ratio ~ ETA_SCALE; w_f weighs the loss modulus per frequency
(omega_f / omega_max for a dashpot, 1 for an independent G'' per frequency).
"""

from __future__ import annotations

import numpy as np

SOFTPLUS_ONE = float(np.log(np.e - 1.0))  # softplus(SOFTPLUS_ONE) = 1
ETA_SCALE = 0.1  # output scale of the loss-modulus channel (initial damping ratio ~0.1)


def storage_loss(o_re, o_im, g_re, g_im, weight):
    """mu' = G' + i G'' (N, F) from channels o_re, o_im (N, 1 or F) and their gradients
    g_re, g_im (d, N, 1 or F) or None, with the loss weight ``weight`` (1, F); grad mu' =
    sigmoid(o_re + c) grad o_re + i ETA_SCALE w_f sigmoid(o_im + c) grad o_im."""
    import jax
    import jax.numpy as jnp

    n_freq = weight.shape[-1]
    shape = o_re.shape[:-1] + (n_freq,)
    re = jnp.broadcast_to(jax.nn.softplus(o_re + SOFTPLUS_ONE), shape)
    im = ETA_SCALE * weight * jax.nn.softplus(o_im + SOFTPLUS_ONE)
    mu = jax.lax.complex(re, im)
    if g_re is None:
        return mu, None
    g_shape = g_re.shape[:-1] + (n_freq,)
    d_re = jnp.broadcast_to(jax.nn.sigmoid(o_re + SOFTPLUS_ONE)[None] * g_re, g_shape)
    d_im = ETA_SCALE * weight[None] * jax.nn.sigmoid(o_im + SOFTPLUS_ONE)[None] * g_im
    return mu, jax.lax.complex(d_re, d_im)
