"""How much does the 10 mm disk's modulus change the data? Four-target, default mesh, the
10 mm disk (radius 5 mm) at G' = 3 kPa + 0.67 * 7 kPa (the PINN's 67 % contrast) against 10 kPa."""
import time, numpy as np
from helmholtz_pinn.elastic import LAYOUTS, Inclusion, simulate_elastic
from helmholtz_pinn.data import save
lay = list(LAYOUTS["four-target"])
lay[1] = lay[1]._replace(storage=3e3 + 0.67 * 7e3)
t = time.time()
d = simulate_elastic(tuple(lay))
save(d, "data/tuning/four-target-soft10_volume_clean.npz")
print("solved", time.time() - t)
