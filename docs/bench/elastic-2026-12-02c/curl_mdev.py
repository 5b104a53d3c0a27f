import numpy as np, json, helmholtz_pinn as hp
from helmholtz_pinn import baselines, metrics
from helmholtz_pinn.elastic import shared_noise
for c in ["two-ellipse", "four-target-50-70-90hz", "four-target-20mm"]:
    d0 = hp.load(f"data/held-out/{c}_volume_clean.npz")
    for db in [-10, -30]:
        d = shared_noise(d0, db, 1)
        mu = baselines.curl_mdev(d, smoothing="gaussian", sigma=2.0)
        e = metrics.evaluate(mu, d)
        print(json.dumps(dict(file=c, db=db, med=round(e["median_rel_error_storage"]*100, 2), R=round(e["pearson_r_storage"], 3))), flush=True)
