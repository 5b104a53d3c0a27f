"""Prepared for the next session (not run on a GPU yet): does sampling the voxels where the
fit leaves the data more often sharpen the modulus at target edges? (The twelfth session:
the fitted field's misfit is 2.3x the background's at target edges, and batch 8192, which
sees those rare voxels in every step, raised the 10 mm contrast.)

argv: spec kind alpha unbiased [overrides_json]
  kind "misfit": a default fit first; its wave_misfit m (mean of m_f^2 over frequencies)
    sets the sampling probability of each mask voxel of a second, fresh fit:
    p_i ~ 1 + alpha * m2_i / median(m2);
  kind "curv": no first fit; m2 is the data's squared discrete Laplacian (in-plane,
    summed over frequencies and components, each field scaled to unit RMS);
  unbiased 1: each sampled voxel is weighted by 1 / (M p_i) (the loss keeps its
    expectation; only the variance changes); 0: not (the loss leans on those voxels).
Prints one repro.py-style line per fit ("stage": "first" or "sampled")."""

import json
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import layout, metrics, train
from repro import load, short

warnings.simplefilter("ignore")


def laplacian2(d):
    """Squared in-plane 5-point Laplacian of the unit-RMS fields, summed over F and C (3-D
    data); the grid's in-plane faces, which have no stencil, get the interior's median."""
    u = d.u / np.sqrt(np.mean(np.abs(d.u[..., d.mask]) ** 2, axis=-1))[..., None, None, None]
    lap = sum(np.roll(u, s, a) for a in (2, 3) for s in (1, -1)) - 4 * u
    out = np.sum(np.abs(lap) ** 2, axis=(0, 1))
    inner = np.zeros(out.shape, bool)
    inner[1:-1, 1:-1] = True
    return np.where(inner, out, np.median(out[inner & d.mask]))


def patch_weights(p, which):
    """train.sample_batch drawing uniformly, with the data point weight times p
    (which "dataw") or the PDE point weight divided by p (which "pdew")."""
    w = jnp.asarray(p / np.mean(p), jnp.float32)

    def sample_batch(problem, key, step, size):
        idx = jax.random.randint(jax.random.fold_in(key, step), (size,), 0, problem.count)
        one = jnp.ones((size,), jnp.float32)
        if which == "dataw":
            return problem.x[idx], problem.u[idx], w[idx], problem.pde[idx]
        return problem.x[idx], problem.u[idx], one, problem.pde[idx] / w[idx]

    train.sample_batch = sample_batch
    layout.compile_block.cache_clear()
    jax.clear_caches()


def patch(p, unbiased):
    """train.sample_batch drawing rows with probabilities p (rows in mask order)."""
    cum = jnp.asarray(np.cumsum(p) / np.sum(p), jnp.float32)
    w = jnp.asarray(1.0 / (len(p) * p / np.sum(p)) if unbiased else np.ones_like(p), jnp.float32)

    def sample_batch(problem, key, step, size):
        r = jax.random.uniform(jax.random.fold_in(key, step), (size,))
        idx = jnp.minimum(jnp.searchsorted(cum, r), problem.count - 1)
        return problem.x[idx], problem.u[idx], w[idx], problem.pde[idx] * w[idx]

    train.sample_batch = sample_batch
    layout.compile_block.cache_clear()
    jax.clear_caches()


def row(stage, spec, over, r, d, t):
    out = {"stage": stage, "spec": spec, "over": over, "t": round(t, 1)}
    out["all"] = short(metrics.evaluate(np.asarray(r.mu), d))
    out.update({k: r.metrics.get(k) for k in ("final_loss", "final_data", "final_pde")})
    print(json.dumps(out, default=float), flush=True)


def main():
    spec, kind, alpha, unbiased = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
    over = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    d = load(spec)
    cache = os.environ.get("M2_CACHE")
    if kind == "first":  # a default fit whose misfit goes to M2_CACHE
        t = time.time()
        first = hp.invert(d, progress=False, **over)
        row("first", spec, over, first, d, time.time() - t)
        m2 = np.mean(metrics.wave_misfit(first.u_fit, d.u, d.mask) ** 2, axis=0)
        np.save(cache, m2)
        return
    if kind in ("dataw", "pdew"):
        m2 = np.load(cache)[d.mask]
        p = 1 + alpha * m2 / np.median(m2)
        patch_weights(p, kind)
    else:
        if kind == "misfit":
            t = time.time()
            first = hp.invert(d, progress=False, **over)
            row("first", spec, over, first, d, time.time() - t)
            m2 = np.mean(metrics.wave_misfit(first.u_fit, d.u, d.mask) ** 2, axis=0)
        else:
            m2 = laplacian2(d)
        m2 = m2[d.mask]
        p = 1 + alpha * m2 / np.median(m2)
        patch(p, unbiased)
    t = time.time()
    r = hp.invert(d, progress=False, **over)
    tag = {"kind": kind, "alpha": alpha, "unbiased": unbiased}
    row("sampled", spec, {**over, "_sampling": tag}, r, d, time.time() - t)


if __name__ == "__main__":
    main()
