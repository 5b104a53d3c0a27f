import warnings; warnings.simplefilter("ignore")
import numpy as np, scipy.ndimage as nd
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
for f in ["tuning/four-target_volume_clean.npz", "held-out/two-ellipse_volume_clean.npz"]:
    d = hp.load("data/clean/" + f)
    mu = np.asarray(d.mu)
    for s in (0.5, 1.0, 1.5, 2.0, 3.0):
        g = np.stack([nd.gaussian_filter(m.real, (s, s, 0), mode="nearest") + 1j * m.imag for m in mu])
        e = metrics.evaluate(g, d)
        print(f.split("/")[1][:12], "sigma %.1f vox" % s, "err %.2f%%" % (100 * e["median_rel_error_storage"]), "R %.3f" % e["pearson_r_storage"], {k: round(v, 2) for k, v in e["contrast_transfer"].items()})
