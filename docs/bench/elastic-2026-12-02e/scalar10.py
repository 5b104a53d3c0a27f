"""Scalar four-target (2-D, the tool's own model, the tuning phantom) at NOISE dB (noise seed 0),
library defaults plus overrides, CPU: does the noisy-2-D rule (sigma_factor_u 0.5) hold on
scalar data? argv: steps overrides_json noise_db."""
import time, warnings, json, sys; warnings.simplefilter("ignore")
import helmholtz_pinn as hp
from helmholtz_pinn import metrics, phantoms
clean = phantoms.simulate_phantom("four-target")
import dataclasses
d = dataclasses.replace(clean, u=phantoms.add_noise(clean.u, float(sys.argv[3]) if len(sys.argv) > 3 else -10.0, 0))
over = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
t = time.time()
r = hp.invert(d, steps=int(sys.argv[1]), progress=False, **over)
ev = metrics.evaluate(r.mu, d)
print(json.dumps({"steps": int(sys.argv[1]), "over": over, "t": round(time.time()-t,1), "med": round(ev["median_rel_error_storage"]*100,2), "R": round(ev["pearson_r_storage"],3), "c": {k: round(v*100) for k,v in ev["contrast_transfer"].items()}, "sfu": r.metrics.get("sigma_factor_u"), "notes": [n[:50] for n in r.metrics["notes"]]}))
