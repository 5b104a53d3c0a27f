"""Thirteenth session, an experiment (not in the library): the navier form without its
pressure. The loss's PDE term becomes |curl r|^2 / kappa, r the navier residual in the
common unit of each frequency (r_i max(scale_i, 1e-3)); curl(grad p) = 0, so the free
pressure drops out and cannot take part of a stiff target's effect on u. d r / d x_j by
forward-mode jvp through the whole jet evaluation (the networks' third derivatives in
effect). A 2-D slice takes d_z = 0 (then only the z-component of the curl sees the in-plane
pair). ``mix`` adds the plain |r|^2 term: pde = |curl r|^2 / kappa + mix |r|^2.

argv: spec mode [overrides_json]; mode "default" (no patch) or "curl:<mix>"."""

import json
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import metrics, train
from helmholtz_pinn.forms.navier import SCALE_MIN
from repro import load, short

warnings.simplefilter("ignore")


def curl_of(jac, d):
    """curl of r from jac (d, N, F, 3) = d r / d x_j; d_z = 0 for d = 2."""
    dz = jac[2] if d == 3 else jnp.zeros_like(jac[0])
    dx, dy = jac[0], jac[1]
    return jnp.stack(
        [dy[..., 2] - dz[..., 1], dz[..., 0] - dx[..., 2], dx[..., 1] - dy[..., 0]], axis=-1
    )


def make_loss_terms(mix):
    def loss_terms(params, consts, spec, problem, batch):
        x, u_obs, point, pde_point = batch
        unit = jnp.maximum(problem.scale, SCALE_MIN)[None]

        def r_fn(xx):
            f = train.evaluate_fields(params, consts, spec, xx, problem.omega_ratio)
            f = f._replace(scale=problem.scale)
            return spec.form.residual(f, problem.kappa) * unit, f.u

        d = x.shape[-1]
        (r, u), _ = jax.jvp(r_fn, (x,), (jnp.zeros_like(x),))
        jac = jnp.stack(
            [jax.jvp(r_fn, (x,), (jnp.zeros_like(x).at[:, j].set(1.0),))[1][0] for j in range(d)]
        )
        c = curl_of(jac, d) / jnp.sqrt(problem.kappa)[None, :, None]
        w_fc = problem.weight

        def mean(sq, w_point):
            norm = jnp.maximum(jnp.sum(w_point), 1.0) * jnp.sum(w_fc)
            return jnp.sum(w_point[:, None, None] * w_fc[None] * sq) / norm

        pde = mean(jnp.abs(c) ** 2, pde_point)
        if mix:
            pde = pde + mix * mean(jnp.abs(r / unit) ** 2, pde_point)
        return mean(jnp.abs(u - u_obs) ** 2, point), pde

    return loss_terms


def main():
    spec, mode = sys.argv[1], sys.argv[2]
    over = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    d = load(spec)
    if mode.startswith("curl"):
        train.loss_terms = make_loss_terms(float(mode.split(":")[1]))
    t = time.time()
    r = hp.invert(d, progress=False, **over)
    row = {"spec": spec, "mode": mode, "over": over, "t": round(time.time() - t, 1)}
    row["all"] = short(metrics.evaluate(np.asarray(r.mu), d))
    row.update({k: r.metrics.get(k) for k in ("final_loss", "final_data", "final_pde")})
    row["quality"] = {c["name"]: c["passed"] for c in r.metrics["fit_quality"]}
    print(json.dumps(row, default=float), flush=True)


if __name__ == "__main__":
    main()
