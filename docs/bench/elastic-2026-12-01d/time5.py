"""Wall time of library-default 3-D fits, one process, sequential (GPU alone)."""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
out = open(sys.argv[1], "w")
T = hp.load("data/clean/tuning/four-target_volume_clean.npz")
Z = hp.load("data/clean/held-out/four-target-20mm_volume_clean.npz")
cases = [("tuning volume 3-D (first)", T, {"slicewise": False}),
         ("tuning volume 3-D (again)", T, {"slicewise": False}),
         ("20 mm volume 3-D (first)", Z, {"slicewise": False}),
         ("tuning volume 3-D w384 nf192", T, {"slicewise": False, "width": 384, "n_features": 192})]
for name, d, kw in cases:
    t = time.perf_counter()
    r = hp.invert(d, progress=False, **kw)
    wall = time.perf_counter() - t
    e = metrics.evaluate(r.mu, d)
    line = dict(case=name, shape=list(d.u.shape), over=kw, wall_s=round(wall, 1), steps=r.metrics.get("steps"),
                err=e["median_rel_error_storage"], R=e["pearson_r_storage"], contrast=e.get("contrast_transfer"),
                timing={k: v for k, v in r.metrics.items() if "time" in k or k.endswith("_s")})
    out.write(json.dumps(line, default=float) + "\n"); out.flush()
    print(json.dumps(line, default=float), flush=True)
