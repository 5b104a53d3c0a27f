"""Tuning runner: files x pde forms x config overrides -> one JSON line per fit."""
import json, sys, time, warnings, itertools
warnings.simplefilter("ignore")
import numpy as np
import helmholtz_pinn as hp
from helmholtz_pinn import metrics, baselines
from helmholtz_pinn.elastic import middle_slice, shared_noise

from helmholtz_pinn import train
_orig_init = train.init_state
def _set_zscale(zs):
    """Experiment hook: scale the through-plane row of both networks' Fourier matrices."""
    def init(spec, *a, **k):
        st = _orig_init(spec, *a, **k)
        if zs is None or spec.ndim != 3:
            return st
        c = {n: {**v, "B": v["B"].at[2].multiply(zs)} for n, v in st.consts.items()}
        return st._replace(consts=c)
    train.init_state = init

def cases(spec):
    # spec: path[:slice][:db:seed]
    parts = spec.split(":")
    if parts[0] == "scalar":
        return hp.simulate(parts[1], noise_db=float(parts[2]) if len(parts) > 2 else None)
    d = hp.load(parts[0])
    if "slice" in parts: d = middle_slice(d)
    if len(parts) >= 3 and parts[-2] not in ("slice",):
        d = shared_noise(d, float(parts[-2]), int(parts[-1]))
    return d

def ev(mu, d):
    e = metrics.evaluate(mu, d)
    keys = [k for k in e if k.startswith(("median_rel", "pearson", "contrast"))]
    return {k: e[k] for k in keys}

files = sys.argv[1].split(",")
pdes = sys.argv[2].split(",")
grid = json.loads(sys.argv[3]) if len(sys.argv) > 3 else [{}]
base = sys.argv[4] if len(sys.argv) > 4 else ""
for f in files:
    d = cases(f)
    if base:
        for m in base.split(","):
            t = time.time()
            mu = baselines.curl_mdev(d) if m == "curl-mdev" else baselines.ahi(d, smoothing="gaussian" if m == "ahi-g" else "none", sigma=2.0)
            print(json.dumps({"file": f, "method": m, "t": round(time.time()-t, 2), **ev(mu, d)}, default=float), flush=True)
    for pde, over in itertools.product(pdes, grid):
        t = time.time()
        over = dict(over)
        zs = over.pop("_zscale", None)
        _set_zscale(zs)
        try:
            r = hp.invert(d, progress=False, pde=pde, **over)
        except hp.HelmholtzPinnError as err:
            print(json.dumps({"file": f, "pde": pde, "over": over, "error": str(err)[:200]}), flush=True); continue
        m = r.metrics
        fq = [c["name"] for c in m.get("fit_quality", []) if not c["passed"] and not c.get("skipped")]
        print(json.dumps({"file": f, "pde": m["pde"], "over": over, "zscale": zs, "t": round(time.time()-t, 1), "loss": m["final_loss"], "fq_fail": fq, "steps_ran": {k: m[k] for k in m if "step" in k and not isinstance(m[k], (dict, list))}, "w": m["field_weight"][0], **ev(r.mu, d)}, default=float), flush=True)
