"""A springpot in parallel with a dashpot, both laws in one:

    mu = mu_0 (i omega / omega_0)^alpha + i omega eta    (mu_0 Pa, 0 < alpha < 1, eta Pa s)

eta = 0 is the springpot, alpha -> 0 the Voigt solid (G' constant, G'' proportional to
omega). Three parameters per voxel: it needs two or more frequencies.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from helmholtz_pinn.laws import Law, Map, springpot
from helmholtz_pinn.laws._channels import ETA_SCALE

# the dashpot at zero network output: a damping ratio of DASHPOT_START ETA_SCALE at the
# highest frequency, beside the springpot's own
DASHPOT_START = 0.1
DASHPOT_OFFSET = float(np.log(np.expm1(DASHPOT_START)))  # softplus(DASHPOT_OFFSET)


class SpringpotDashpot(NamedTuple):
    """``modulus`` mu_0 Pa and ``alpha`` in (0, 1) of the springpot, the dashpot's
    ``viscosity`` eta Pa s, ``reference_frequency`` f_0 Hz."""

    modulus: float
    alpha: float
    viscosity: float
    reference_frequency: float = 50.0


def modulus(p: SpringpotDashpot, f: np.ndarray) -> np.ndarray:
    """mu = mu_0 (i f / f_0)^alpha + i 2 pi f eta (Pa) at ``f`` Hz."""
    power = springpot.modulus(springpot.Springpot(p.modulus, p.alpha, p.reference_frequency), f)
    return power + 1j * (2 * np.pi * f) * p.viscosity


def valid(p: SpringpotDashpot) -> bool:
    power = springpot.Springpot(p.modulus, p.alpha, p.reference_frequency)
    return springpot.valid(power) and bool(np.all(np.asarray(p.viscosity) >= 0))


def network(value, grad, omega_ratio):
    """mu' = kappa (i omega_f / omega_max)^alpha + i (omega_f / omega_max) eta' (N, F):
    the springpot of channels 0-1 (:func:`springpot.network`) plus
    eta' = ETA_SCALE softplus(o_2 + DASHPOT_OFFSET) >= 0; the dashpot's gradient is
    i r_f ETA_SCALE sigmoid(o_2 + DASHPOT_OFFSET) grad o_2."""
    import jax
    import jax.numpy as jnp

    mu, g = springpot.network(value[..., :2], None if grad is None else grad[..., :2], omega_ratio)
    o_d = value[..., 2:3] + DASHPOT_OFFSET
    im = ETA_SCALE * omega_ratio[None, :] * jax.nn.softplus(o_d)
    mu = mu + jax.lax.complex(jnp.zeros_like(im), im)
    if grad is None:
        return mu, None
    g_im = ETA_SCALE * omega_ratio[None, None, :] * jax.nn.sigmoid(o_d)[None] * grad[..., 2:3]
    return mu, g + jax.lax.complex(jnp.zeros_like(g_im), g_im)


def read(mu: np.ndarray, omega: np.ndarray) -> dict:
    """G' = mu_0 cos(alpha pi / 2) (omega / omega_0)^alpha, so alpha is the
    least-squares slope of ln G' over ln omega, and eta = (G'' - G' tan(alpha pi / 2)) /
    omega at the highest frequency (exact for such a fit)."""
    top = int(np.argmax(omega))
    dw = np.log(omega) - np.log(omega).mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        log_g = np.log(mu.real)
    alpha = np.tensordot(dw, log_g - log_g.mean(axis=0), axes=1) / np.sum(dw**2)
    eta = (mu[top].imag - mu[top].real * np.tan(alpha * np.pi / 2)) / omega[top]
    return {"alpha": alpha, "viscosity": eta}


def describe(median: dict) -> str:
    """Which law the tissue is like, from the medians of alpha and eta."""
    return (
        f"median alpha {median['alpha']:.3f} and eta {median['viscosity']:.3g} Pa s over the "
        "mask (alpha 0 is the Voigt solid, eta 0 the springpot)"
    )


LAW = Law(
    name="springpot-dashpot",
    equation="mu = mu_0 (i omega / omega_0)^alpha + i omega eta",
    channels=lambda n_freq: 3,
    network=network,
    parameters=SpringpotDashpot,
    modulus=modulus,
    valid=valid,
    requires=(
        "modulus > 0 Pa, alpha in (0, 1), viscosity >= 0 Pa s and reference_frequency > 0 Hz"
    ),
    maps={"alpha": Map("alpha", "1", "1"), "viscosity": Map("eta", "Pa s", "Pa_s")},
    read=read,
    describe=describe,
    min_frequencies=2,
)
