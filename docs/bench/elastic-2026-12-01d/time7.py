"""Wall time of the 512-wide 3-D fit, one process (GPU alone)."""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
out = open(sys.argv[1], "w")
T = hp.load("data/clean/tuning/four-target_volume_clean.npz")
kw = {"slicewise": False, "width": 512, "n_features": 256}
for name in ("first", "again"):
    t = time.perf_counter()
    r = hp.invert(T, progress=False, **kw)
    wall = time.perf_counter() - t
    e = metrics.evaluate(r.mu, T)
    line = dict(case=f"tuning volume 3-D w512 nf256 ({name})", over=kw, wall_s=round(wall, 1), steps=r.metrics.get("steps"),
                err=e["median_rel_error_storage"], R=e["pearson_r_storage"])
    out.write(json.dumps(line, default=float) + "\n"); out.flush(); print(json.dumps(line), flush=True)
