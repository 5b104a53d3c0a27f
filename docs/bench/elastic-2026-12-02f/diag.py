"""A default fit whose networks come back for CPU analysis (diagcpu.py): argv spec out.npz
[overrides_json]. Writes out.npz with mu (F, *grid) Pa, u_fit (F, C, *grid), the config
overrides, and every parameter and constant leaf of both networks under 'p/<path>' and
'c/<path>'; prints the repro.py line."""

import json
import sys
import time
import warnings

import jax
import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import metrics
from repro import load, short

warnings.simplefilter("ignore")


def leaves(tree, prefix):
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {prefix + jax.tree_util.keystr(p): np.asarray(v) for p, v in flat}


spec, out = sys.argv[1], sys.argv[2]
over = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
d = load(spec)
t = time.time()
r = hp.invert(d, progress=False, **over)
wall = round(time.time() - t, 1)
np.savez_compressed(
    out,
    mu=np.asarray(r.mu),
    u_fit=np.asarray(r.u_fit).astype(np.complex64),
    over=json.dumps(over),
    metrics=json.dumps(r.metrics, default=float),
    **leaves(r.params, "p/"),
    **leaves(r.consts, "c/"),
)
row = {"spec": spec, "over": over, "t": wall, "all": short(metrics.evaluate(np.asarray(r.mu), d))}
row.update({k: r.metrics.get(k) for k in ("final_loss", "final_data", "final_pde")})
print(json.dumps(row, default=float), flush=True)
