"""Default fit of each file, its modulus map saved for analysis. argv: out_dir file..."""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
out = sys.argv[1]
for f in sys.argv[2:]:
    d = hp.load(f)
    t = time.time()
    r = hp.invert(d, progress=False)
    name = f.split("/")[-1].replace(".npz", "")
    np.savez_compressed(f"{out}/map_{name}.npz", mu=np.asarray(r.mu), true=np.asarray(d.mu), mask=np.asarray(d.mask))
    e = metrics.evaluate(r.mu, d)
    print(json.dumps({"file": f, "t": round(time.time() - t, 1), "err": e["median_rel_error_storage"], "R": e["pearson_r_storage"], "contrast": e.get("contrast_transfer")}, default=float), flush=True)
