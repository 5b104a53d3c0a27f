"""curl-MDEV (the library's baseline) on the clean tuning volumes: 10 mm contrast by smoothing."""
import warnings; warnings.simplefilter("ignore")
import sys, numpy as np, helmholtz_pinn as hp
from helmholtz_pinn import baselines, metrics
for p in sys.argv[1:]:
    d = hp.load(p)
    for kw in ({"smoothing": "none"}, {"smoothing": "gaussian", "sigma": 1.0}, {"smoothing": "gaussian", "sigma": 2.0}):
        try:
            mu = baselines.curl_mdev(d, **kw)
        except TypeError as e:
            print(kw, e); continue
        e = metrics.evaluate(np.nan_to_num(np.asarray(mu)), d, margin=2)
        print(p.split("/")[-1], kw, round(e["median_rel_error_storage"] * 100, 2), round(e["pearson_r_storage"], 3),
              {k: round(v * 100) for k, v in e["contrast_transfer"].items()})
