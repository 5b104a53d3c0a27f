"""Edge diagnostics: fit volumes (optionally cropped, optionally with a PDE margin patched in)
and print the signed G' error profile by distance from each face. argv: spec overrides_json...
spec: path[:crop=x0-x1-y0-y1][:db:seed]; override keys starting with '_' are experiment hooks:
  _pde_margin: voxels at the in-plane faces left out of the PDE loss (patched train.loss_terms)."""
import json, sys, time, warnings, dataclasses
warnings.simplefilter("ignore")
import numpy as np
import jax, jax.numpy as jnp
import helmholtz_pinn as hp
from helmholtz_pinn import metrics, train
from helmholtz_pinn.elastic import shared_noise
hp.enable_compilation_cache("/tmp/jc")

_orig = train.loss_terms

def patch(margin, lo, hi, h, wmin=0.0):
    from helmholtz_pinn import layout
    layout.compile_block.cache_clear(); jax.clear_caches()
    if not margin:
        train.loss_terms = _orig; return
    lo = jnp.asarray(lo, jnp.float32); hi = jnp.asarray(hi, jnp.float32)
    def loss_terms(params, consts, spec, problem, batch):
        x, u_obs, point = batch
        inner = jnp.all((x[:, :2] > lo[:2] + (margin - 0.5) * h) & (x[:, :2] < hi[:2] - (margin - 0.5) * h), axis=1)
        f = train.evaluate_fields(params, consts, spec, x, problem.omega_ratio)._replace(scale=problem.scale)
        r = spec.form.residual(f, problem.kappa)
        w_fc = problem.weight
        def mean(sq, pw):
            return jnp.sum(pw[:, None, None] * w_fc[None] * sq) / (jnp.sum(pw) * jnp.sum(w_fc))
        pde_point = point * jnp.where(inner, 1.0, wmin)
        return mean(jnp.abs(f.u - u_obs) ** 2, point), mean(jnp.abs(r) ** 2, pde_point)
    train.loss_terms = loss_terms

def load(spec):
    parts = spec.split(":")
    d = hp.load(parts[0])
    rest = parts[1:]
    if rest and rest[0].startswith("crop="):
        x0, x1, y0, y1 = map(int, rest[0][5:].split("-"))
        sl = (slice(x0, x1), slice(y0, y1))
        d = dataclasses.replace(d, u=d.u[(..., *sl, slice(None))], mask=None if d.mask is None else d.mask[(*sl, slice(None))],
                                mu=d.mu[(..., *sl, slice(None))], regions=None if d.regions is None else d.regions[(*sl, slice(None))])
        rest = rest[1:]
    if len(rest) == 2:
        d = shared_noise(d, float(rest[0]), int(rest[1]))
    return d

def profile(mu, d, depth=8, band=10):
    g, true = np.real(mu), np.real(d.mu)
    g = g if g.ndim == np.ndim(d.regions) else g.mean(0)
    true = true if true.ndim == np.ndim(d.regions) else true.mean(0)
    e = (g - true) / true
    bg = d.regions == 1 if d.regions is not None else np.ones_like(e, bool)
    if e.ndim == 2:
        e, bg = e[..., None], bg[..., None]
    nx, ny, nz = e.shape
    out = {}
    def med(sel): 
        v = e[sel][bg[sel]]; return round(float(np.median(v)) * 100, 1) if v.size else None
    out["x0"] = [med((k, slice(band, ny - band), slice(None))) for k in range(depth)]
    out["x1"] = [med((nx - 1 - k, slice(band, ny - band), slice(None))) for k in range(depth)]
    out["y0"] = [med((slice(band, nx - band), k, slice(None))) for k in range(depth)]
    out["y1"] = [med((slice(band, nx - band), ny - 1 - k, slice(None))) for k in range(depth)]
    out["z"] = [med((slice(band, nx - band), slice(band, ny - band), k)) for k in range(nz)]
    return out

def short(e):
    return {"med": round(e["median_rel_error_storage"] * 100, 2), "R": round(e["pearson_r_storage"], 3),
            "G''": round((e.get("median_rel_error_loss") or 0) * 100, 1),
            "c": {k: round(v * 100) for k, v in e.get("contrast_transfer", {}).items()}}

spec = sys.argv[1]
d = load(spec)
for over in map(json.loads, sys.argv[2:]):
    hooks = {k: over.pop(k) for k in list(over) if k.startswith("_")}
    L = max((n - 1) * h for n, h in zip(d.grid, d.spacing))
    h = float(d.spacing[0]) / L
    hi = [(n - 1) * s / L for n, s in zip(d.grid, d.spacing)]
    patch(hooks.get("_pde_margin", 0), [0, 0, 0], hi, h, hooks.get("_pde_margin_w", 0.0))
    t = time.time()
    r = hp.invert(d, progress=False, **over)
    dt = round(time.time() - t, 1)
    mu = np.asarray(r.mu)
    row = {"spec": spec, "over": over, "hooks": hooks, "t": dt, "all": short(metrics.evaluate(mu, d)),
           "pde_margin": r.metrics.get("pde_margin"), **{k: r.metrics.get(k) for k in ("final_loss", "final_data", "final_pde")}, "m2": short(metrics.evaluate(mu, d, margin=2, axes=(0, 1))), "m5": short(metrics.evaluate(mu, d, margin=5, axes=(0, 1))),
           "prof": profile(mu, d)}
    print(json.dumps(row, default=float), flush=True)
