"""Local (homogeneous) Helmholtz form, per component:  mu Lap u + rho omega^2 u = 0.

Nondimensional residual  r = mu' Lap' u' / kappa_f + u'.
Exact for shear waves where mu is locally constant; cheapest (no gradient of mu).
"""

from helmholtz_pinn.pinn.forms import Fields, Form


def residual(f: Fields, kappa):
    """r (N, F, C) for u (N, F, C), mu (N, F), kappa (F,)."""
    return f.mu[..., None] * f.lap_u / kappa[None, :, None] + f.u


FORM = Form(
    name="helmholtz",
    equation="mu Lap u + rho omega^2 u = 0",
    needs=frozenset({"lap_u"}),
    residual=residual,
)
