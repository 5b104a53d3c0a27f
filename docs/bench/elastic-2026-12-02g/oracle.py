"""Thirteenth session, a diagnosis (not a method): does the 10 mm contrast rise when the
u-network can make a kink where the true modulus jumps? The u-network gets, beside its
Fourier features, one input channel per target: c_k(x) = sqrt(q_k^2 + e_k^2) / (2 R_k),
q_k = |x_inplane - centre_k|^2 - R_k^2 (about |r - R_k| near the edge, a kink regularised
over ``delta`` voxels), with its exact gradient and second derivatives in the jet. Centres
and radii come from the true region labels (an oracle). The mu-network is unchanged.

argv: spec delta_voxels [overrides_json [net]]  (delta 0: no oracle, the paired default fit)
net "u" (default) or "mu": with "mu" the mu-network gets step channels instead,
s_k = tanh(q_k / e_k) (about sign(r - R_k), a step over ``delta`` voxels), and the
u-network is unchanged: can a modulus that is free to be sharp at the true edges be?"""

import json
import sys
import time
import warnings

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import metrics, model, train
from helmholtz_pinn.model import GRAD, HESS, LAP, FourierMLP, pairs
from helmholtz_pinn.problem import field_of_view
from repro import load, short

warnings.simplefilter("ignore")
TARGETS = []  # (cx, cy, R, eps) nondimensional
KIND = ["kink"]  # "kink" (u-network) or "step" (mu-network)


def targets(d, delta):
    length = field_of_view(d)
    hx, hy = d.spacing[0], d.spacing[1]
    reg = d.regions if d.regions.ndim == 2 else d.regions[..., 0]
    out = []
    for label in sorted(set(np.unique(reg)) - {0, 1}):
        ii, jj = np.nonzero(reg == label)
        cx, cy = ii.mean() * hx / length, jj.mean() * hy / length
        r = np.sqrt(len(ii) * hx * hy / np.pi) / length
        out.append((cx, cy, r, 2 * r * delta * hx / length))
    return out


def oracle_jet(x, order):
    """Jet rows (K, N, n_targets) of the channels c_k, in model.fourier_jet's row order."""
    d = x.shape[-1]
    vals, grads, laps, hess = [], [], [], []
    for cx, cy, r, e in TARGETS:
        dx, dy = x[:, 0] - cx, x[:, 1] - cy
        q = dx**2 + dy**2 - r**2
        if KIND[0] == "kink":
            f = jnp.sqrt(q**2 + e**2)
            f1, f2 = q / f, e**2 / f**3
            norm = 2 * r
        else:
            f = jnp.tanh(q / e)
            f1 = (1 - f**2) / e
            f2 = -2 * f * f1 / e
            norm = 1.0
        qg = [2 * dx, 2 * dy] + [jnp.zeros_like(dx)] * (d - 2)
        qh = lambda i, j: (2.0 if i == j and i < 2 else 0.0)  # noqa: E731
        vals.append(f / norm)
        grads.append(jnp.stack([f1 * qg[i] for i in range(d)]) / norm)
        h = lambda i, j: (f2 * qg[i] * qg[j] + f1 * qh(i, j)) / norm  # noqa: E731
        laps.append(sum(h(i, i) for i in range(d)))
        hess.append(jnp.stack([h(i, j) for i, j in pairs(d)]))
    rows = [jnp.stack(vals, -1)[None]]
    if order >= GRAD:
        rows.append(jnp.stack(grads, -1))
    if order == LAP:
        rows.append(jnp.stack(laps, -1)[None])
    if order == HESS:
        rows.append(jnp.stack(hess, -1))
    return jnp.concatenate(rows, 0)


class OracleMLP(FourierMLP):
    @nn.compact
    def __call__(self, x, order=0):
        b = self.variable(
            "constants",
            "B",
            lambda: self.sigma
            * __import__("jax").random.normal(
                self.make_rng("params"), (self.n_in, self.n_features)
            ),
        ).value
        stack = jnp.concatenate(
            [model.fourier_jet(x, 2 * jnp.pi * b, order), oracle_jet(x, order)], -1
        )
        for i in range(self.depth):
            stack = model._dense(self, stack, self.width, f"hidden_{i}")
            stack = model.activation_jet(stack, self.activation, self.n_in, order)
        return model._dense(self, stack, self.n_out, "out")


_apply = model.apply_jet


def apply_jet(params, consts, x, activation, order):
    if params["hidden_0_kernel"].shape[0] == 2 * consts["B"].shape[-1]:
        return _apply(params, consts, x, activation, order)
    depth = sum(k.startswith("hidden_") and k.endswith("_kernel") for k in params)
    stack = jnp.concatenate(
        [model.fourier_jet(x, 2 * jnp.pi * consts["B"], order), oracle_jet(x, order)], -1
    )
    for i in range(depth):
        stack = model.affine_jet(stack, params[f"hidden_{i}_kernel"], params[f"hidden_{i}_bias"])
        stack = model.activation_jet(stack, activation, x.shape[-1], order)
    return model.affine_jet(stack, params["out_kernel"], params["out_bias"])


def patch(net):
    model.apply_jet = train.apply_jet = apply_jet
    original = train.Spec.networks

    def oracle(n):
        return OracleMLP(n.n_in, n.n_out, n.width, n.depth, n.n_features, n.sigma, n.activation)

    def networks(self, sigma_u, sigma_mu):
        u, mu = original(self, sigma_u, sigma_mu)
        return (oracle(u), mu) if net == "u" else (u, oracle(mu))

    train.Spec.networks = networks


def main():
    spec, delta = sys.argv[1], float(sys.argv[2])
    over = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    net = sys.argv[4] if len(sys.argv) > 4 else "u"
    KIND[0] = "kink" if net == "u" else "step"
    d = load(spec)
    if delta > 0:
        TARGETS.extend(targets(d, delta))
        patch(net)
    t = time.time()
    r = hp.invert(d, progress=False, **over)
    row = {"spec": spec, "delta": delta, "net": net, "over": over, "t": round(time.time() - t, 1)}
    row["all"] = short(metrics.evaluate(np.asarray(r.mu), d))
    row.update({k: r.metrics.get(k) for k in ("final_loss", "final_data", "final_pde")})
    print(json.dumps(row, default=float), flush=True)


if __name__ == "__main__":
    main()
