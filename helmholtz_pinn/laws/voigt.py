"""Voigt solid, a spring and a dashpot in parallel:

    mu = G' + i omega eta        (G' storage modulus Pa, eta viscosity Pa s)

G' is the same at every frequency and G'' = omega eta grows with it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from helmholtz_pinn.laws import Law, Map
from helmholtz_pinn.laws._channels import storage_loss


class Voigt(NamedTuple):
    """``storage`` G' Pa, ``viscosity`` eta Pa s."""

    storage: float
    viscosity: float


def modulus(p: Voigt, f: np.ndarray) -> np.ndarray:
    """mu = G' + i 2 pi f eta (Pa) at ``f`` Hz."""
    return p.storage + 1j * (2 * np.pi * f) * p.viscosity


def valid(p: Voigt) -> bool:
    return bool(np.all(np.asarray(p.storage) > 0) and np.all(np.asarray(p.viscosity) >= 0))


def network(value, grad, omega_ratio):
    """mu' = G' + i (omega_f / omega_max) eta' (N, F) from channels (o_0, o_1):
    G' = softplus(o_0 + c), eta' = ETA_SCALE softplus(o_1 + c) (:mod:`._channels`)."""
    g = (None, None) if grad is None else (grad[..., :1], grad[..., 1:2])
    return storage_loss(value[..., :1], value[..., 1:2], *g, omega_ratio[None, :])


def read(mu: np.ndarray, omega: np.ndarray) -> dict:
    """eta = G'' / omega (Pa s) at the highest frequency (the same at every frequency for
    a Voigt fit)."""
    top = int(np.argmax(omega))
    return {"viscosity": mu[top].imag / omega[top]}


LAW = Law(
    name="voigt",
    equation="mu = G' + i omega eta",
    channels=lambda n_freq: 2,
    network=network,
    parameters=Voigt,
    modulus=modulus,
    valid=valid,
    requires="storage > 0 Pa and viscosity >= 0 Pa s",
    maps={"viscosity": Map("eta", "Pa s", "Pa_s")},
    read=read,
    auto=1,
)
