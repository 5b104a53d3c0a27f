"""Does the final loss tell a poor optimum from a good one? Small elastic fixture, CPU fit, seeds 0-7."""
import json, time, warnings; warnings.simplefilter("ignore")
from helmholtz_pinn import inversion, metrics
from helmholtz_pinn.data import example
import sys; sys.path.insert(0, "tests")  # run from the repository root
from test_elastic_recovery import CPU_FIT
data = example("elastic-two-ellipse-slice")
for seed in range(8):
    t = time.time()
    res = inversion.invert(data, CPU_FIT.replace(seed=seed), devices=1, progress=False)
    ev = metrics.evaluate(res.mu, data)
    m = res.metrics
    print(json.dumps({"seed": seed, "t": round(time.time() - t, 1), "med": round(ev["median_rel_error_storage"] * 100, 1),
        "R": round(ev["pearson_r_storage"], 3), "final_data": m.get("final_data"), "final_pde": m.get("final_pde"),
        "final_loss": m.get("final_loss"), "keys": [k for k in m if "final" in k or "loss" in k]}), flush=True)
