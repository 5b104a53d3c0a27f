"""Device run 4: wall time of library-default fits (new defaults), one process, sequential."""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
from helmholtz_pinn.elastic import middle_slice, shared_noise
out = open(sys.argv[1], "w")
E = hp.load("data/clean/held-out/two-ellipse_volume_clean.npz")
cases = [("scalar four-target", hp.simulate("four-target"), {}),
         ("scalar four-target (again)", hp.simulate("four-target"), {}),
         ("two-ellipse slice", middle_slice(E), {}),
         ("two-ellipse slice (again)", middle_slice(E), {}),
         ("two-ellipse volume, slicewise (auto)", E, {}),
         ("two-ellipse volume -20 dB seed 2, 3-D", shared_noise(E, -20.0, 2), {"slicewise": False})]
for name, d, kw in cases:
    t = time.perf_counter()
    r = hp.invert(d, progress=False, **kw)
    wall = time.perf_counter() - t
    e = metrics.evaluate(r.mu, d)
    line = dict(case=name, wall_s=round(wall, 1), steps=r.metrics.get("steps"),
                err=e["median_rel_error_storage"], R=e["pearson_r_storage"],
                timing={k: v for k, v in r.metrics.items() if "time" in k or k.endswith("_s")})
    out.write(json.dumps(line, default=float) + "\n"); out.flush()
