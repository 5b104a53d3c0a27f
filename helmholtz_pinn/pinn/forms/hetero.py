"""Heterogeneous Helmholtz form, per component:  div(mu grad u) + rho omega^2 u = 0.

div(mu grad u) = mu Lap u + grad mu . grad u, so the nondimensional residual is
    r = (mu' Lap' u' + grad' mu' . grad' u') / kappa_f + u'.
"""

import jax.numpy as jnp

from helmholtz_pinn.pinn.forms import Fields, Form


def residual(f: Fields, kappa):
    """r (N, F, C); gradients are (d, N, F[, C])."""
    flux = f.mu[..., None] * f.lap_u + jnp.sum(f.grad_mu[..., None] * f.grad_u, axis=0)
    return flux / kappa[None, :, None] + f.u


FORM = Form(
    name="hetero",
    equation="div(mu grad u) + rho omega^2 u = 0",
    needs=frozenset({"grad_u", "lap_u", "grad_mu"}),
    residual=residual,
)
