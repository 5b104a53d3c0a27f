"""EXPERIMENT (tenth session, not in the library): navier with a pressure that may jump where
mu jumps, p' = kappa (a0 + mu' a1), a0 and a1 smooth network outputs. To run call_j.sh, copy
this file to helmholtz_pinn/forms/navierj.py (forms are found by module name)."""
import jax.numpy as jnp
from helmholtz_pinn.forms import Form
from helmholtz_pinn.forms import navier


def residual(f, kappa):
    s = f.scale[None]
    g = f._replace(grad_aux=f.grad_aux[..., :1] * 0)  # navier without its pressure
    r = navier.residual(g, kappa) * jnp.maximum(s, navier.SCALE_MIN)
    d = f.grad_u.shape[0]
    a0g, a1, a1g = f.grad_aux[..., 0], f.aux[..., 1], f.grad_aux[..., 1]
    extra = [a0g[i] + f.mu * a1g[i] + f.grad_mu[i] * a1 for i in range(d)]
    extra += [jnp.zeros_like(extra[0])] * (r.shape[-1] - d)
    return (r + jnp.stack(extra, axis=-1)) / jnp.maximum(s, navier.SCALE_MIN)


FORM = Form(
    name="navierj",
    equation="div(mu (grad u + grad u^T)) + grad p + rho omega^2 u = 0, p = p0 + mu a",
    needs=frozenset({"grad_u", "lap_u", "hess_u", "grad_mu", "grad_aux"}),
    residual=residual,
    aux=2,
    components=(2, 3),
    vector=True,
)
