"""Navier-Cauchy form, for vector data: the time-harmonic elastic wave equation

    div(mu (grad u + grad u^T)) + grad p + rho omega^2 u = 0,   p = lambda div u,

per component i (summation over the grid axes j):

    mu Lap u_i + mu d_i div u + sum_j d_j mu (d_j u_i + d_i u_j) + d_i p + rho omega^2 u_i = 0.

The pressure-like p is an unknown field (an auxiliary output of the mu-network), not
lambda div u: lambda of soft tissue is ~1e3 times mu and div u ~1e-3 times grad u, so
their product is finite while each factor is unmeasurable; a free p keeps the problem
well posed for any lambda. d_i div u = sum_j d_i d_j u_j needs the mixed second
derivatives (the HESS jet of :mod:`helmholtz_pinn.pinn.model`).

A 2-D slice of 3-D motion assumes d_z = 0 (waves travel in the slice plane): then the
through-plane component obeys div(mu grad u_z) + rho omega^2 u_z = 0 and the in-plane
pair carries p. Volumes use all three derivatives and are the recommended input.

Nondimensional: components are coupled, so they are compared in one unit per frequency,
U_c = scale_c u'_c (``Fields.scale``: each component's RMS over the strongest's); p' =
kappa_f a with a the network's O(1) output, and the residual of component i is
    r_i = ([shear terms in U]_i / kappa_f + d_i a + U_i) / max(scale_i, SCALE_MIN)
(in the component's own unit; weights per field are the loss's business).
"""

import jax.numpy as jnp

from helmholtz_pinn.pinn.forms import Fields, Form

SCALE_MIN = 1e-3  # components weaker than this are divided by it (their weight is ~0)


def residual(f: Fields, kappa):
    """r (N, F, C) for u (N, F, C), gradients (d, N, F, C), hess_u (d, d, N, F, C)."""
    s = f.scale[None]  # (1, F, C)
    u, lap, grad, hess = f.u * s, f.lap_u * s, f.grad_u * s[None], f.hess_u * s[None, None]
    d, n_comp = grad.shape[0], u.shape[-1]
    mu, gmu = f.mu, f.grad_mu  # (N, F), (d, N, F)
    rows = []
    for i in range(n_comp):
        shear = mu * lap[..., i] + sum(gmu[j] * grad[j, ..., i] for j in range(d))
        if i < d:  # in-plane: the transposed gradient, grad div u and the pressure
            shear += mu * sum(hess[i, j, ..., j] for j in range(d))
            shear += sum(gmu[j] * grad[i, ..., j] for j in range(d))
        r = shear / kappa[None, :] + u[..., i]
        if i < d:
            r += f.grad_aux[i, ..., 0]
        rows.append(r)
    return jnp.stack(rows, axis=-1) / jnp.maximum(s, SCALE_MIN)


FORM = Form(
    name="navier",
    equation="div(mu (grad u + grad u^T)) + grad p + rho omega^2 u = 0",
    needs=frozenset({"grad_u", "lap_u", "hess_u", "grad_mu", "grad_aux"}),
    residual=residual,
    aux=1,
    components=(2, 3),
    vector=True,
    # Why these three (measurements): docs/defaults.md. A sixth of the shortest shear
    # wavelength (3 voxels on 1 mm data at 60-100 Hz) at a volume's free faces; the free
    # pressure absorbs part of a wrong law's misfit, so spreads are smaller; the L-BFGS
    # phase was measured on one clean navier fit.
    pde_margin={3: 1 / 6},
    spread_max=0.0025,
    lbfgs_default=True,
)
