"""CPU analysis of diag.py's fit (argv: spec d0.npz [blurred-phantom.npz ...]): where does the
10 mm disk's contrast go?
1. u_fit against the data, relative L2 within 5 mm (in-plane) of the 10 mm disk and in
   the background beyond, per frequency; also against the FEM phantoms solved with G'
   blurred (files given after d0.npz): does the fitted field follow the sharp or the
   blurred physics near the disk?
2. The fitted networks' navier residual (u and p as fitted, G'' as fitted) with G' = the
   fit's and with G' = the truth blurred in-plane by 0, 1, 1.5, 2 mm, grad G' by central
   differences on the voxels in every case (the fit's G' also with the network's exact
   gradient, to show what the differences cost): RMS per frequency in the two bands."""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from scipy.ndimage import binary_dilation, gaussian_filter

import helmholtz_pinn as hp
from helmholtz_pinn import problem, train
from helmholtz_pinn.config import Config
from repro import load

jax.config.update("jax_platforms", "cpu")
spec, path = sys.argv[1], sys.argv[2]
d = load(spec)
z = np.load(path)
over = json.loads(str(z["over"]))
facts = json.loads(str(z["metrics"]))
prep = problem.prepare(d, Config().replace(**over))
print("mu_ref", prep.scales.mu_ref, "fit", facts["mu_ref_pa"])
st = train.init_state(prep.spec, 0, prep.sigma_u, prep.sigma_mu, 1e-3, 0.25)


def fill(tree, prefix):
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    return jax.tree_util.tree_unflatten(
        treedef, [jnp.asarray(z[prefix + jax.tree_util.keystr(p)]) for p, _ in flat]
    )


params, consts = fill(st.params, "p/"), fill(st.consts, "c/")
pb, spec_ = prep.problem, prep.spec
mask = d.mask
inner = binary_dilation(d.regions == 3, np.ones((11, 11, 1))) & mask
band = {"near 10 mm": inner.ravel()[mask.ravel()], "background": ((d.regions == 1) & ~inner).ravel()[mask.ravel()]}
pde = np.asarray(pb.pde) > 0

# 1. the fitted field against the data (and blurred-physics phantoms)
u_fit = z["u_fit"]
for name, sel in (("near 10 mm", inner), ("background", (d.regions == 1) & ~inner & mask)):
    for label, ref in [("data", d.u)] + [(p, hp.load(p).u) for p in sys.argv[3:]]:
        e = [float(np.linalg.norm((u_fit[f] - ref[f])[:, sel]) / np.linalg.norm(ref[f][:, sel])) for f in range(d.n_freq)]
        print(f"u_fit vs {label.split('/')[-1]}, {name}: " + " ".join(f"{v:.3f}" for v in e))
for p in sys.argv[3:]:
    ref = hp.load(p).u
    e = [float(np.linalg.norm((d.u[f] - ref[f])[:, inner]) / np.linalg.norm(d.u[f][:, inner])) for f in range(d.n_freq)]
    print(f"data vs {p.split('/')[-1]}, near 10 mm: " + " ".join(f"{v:.3f}" for v in e))

# 2. residuals
fn = jax.jit(lambda x: train.evaluate_fields(params, consts, spec_, x, pb.omega_ratio))
parts = [fn(jnp.asarray(pb.x[i : i + 4096])) for i in range(0, len(pb.x), 4096)]
f = jax.tree.map(lambda *a: np.concatenate(a, axis=-3 if a[0].ndim >= 4 else (1 if a[0].ndim == 3 and a[0].shape[0] == d.ndim else 0)) if a[0] is not None else None, *parts)
L, mu_ref = prep.scales.length, prep.scales.mu_ref
h = np.asarray(d.spacing) / L


def grid_of(values):
    g = np.full(d.grid, np.nan)
    g[mask] = values
    return g


def with_gprime(gp_grid, grad_exact=None):
    """Fields with G' (Pa, on the grid) replaced; grad by central differences unless given."""
    gp = gp_grid[mask] / mu_ref
    if grad_exact is None:
        gr = np.stack([np.gradient(gp_grid / mu_ref, h[k], axis=k)[mask] for k in range(3)])
    else:
        gr = grad_exact
    mu = gp[:, None] + 1j * np.asarray(f.mu).imag
    gmu = gr[:, :, None] + 1j * np.asarray(f.grad_mu).imag
    return f._replace(mu=jnp.asarray(mu, jnp.complex64), grad_mu=jnp.asarray(gmu, jnp.complex64), scale=pb.scale)


def report(label, fields):
    r = np.asarray(spec_.form.residual(fields, pb.kappa))
    w = np.asarray(pb.weight)
    sq = (np.abs(r) ** 2 * w[None]).sum(-1) / w.sum(-1)[None]  # (N, F)
    out = []
    for name, sel in band.items():
        s = sel & pde
        out.append(name + " " + " ".join(f"{np.sqrt(sq[s, k].mean()):.4f}" for k in range(d.n_freq)))
    print(f"{label:34s} | " + " | ".join(out))


gfit = grid_of(np.asarray(f.mu).real[:, 0] * mu_ref)
print("residual RMS per frequency (nondimensional, field-weighted):")
report("fit G', network gradient", f._replace(scale=pb.scale))
report("fit G', central differences", with_gprime(np.where(mask, gfit, 0)))
true = np.real(d.mu[0])
for s in (0.0, 1.0, 1.5, 2.0):
    g = true if s == 0 else gaussian_filter(true, (s, s, 0), mode="nearest")
    report(f"truth blurred {s} mm", with_gprime(g))
