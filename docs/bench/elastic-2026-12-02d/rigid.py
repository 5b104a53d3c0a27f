"""Inside each target (eroded 1 voxel, mid-z): |mu Lap u| and |grad p| = |mu Lap u + rho w^2 u|
(the shear term's and the pressure's share of the inertia) relative to |rho w^2 u|; FD on the voxels."""
import sys, numpy as np, helmholtz_pinn as hp
from scipy.ndimage import binary_erosion
d = hp.load(sys.argv[1]); h = d.spacing
mu = d.mu if d.mu.ndim == 4 else np.broadcast_to(d.mu, (d.n_freq, *d.grid))
sh = 0; gp = 0; den = 0
for f in range(d.n_freq):
    w2 = d.rho * (2 * np.pi * d.frequency[f]) ** 2
    for c in range(3):
        uc = d.u[f, c].astype(np.complex128)
        lap = sum(np.gradient(np.gradient(uc, h[a], axis=a, edge_order=2), h[a], axis=a, edge_order=2) for a in range(3))
        sh = sh + np.abs(mu[f] * lap) ** 2; gp = gp + np.abs(mu[f] * lap + w2 * uc) ** 2; den = den + np.abs(w2 * uc) ** 2
mid = np.zeros(d.grid, bool); mid[15:-15, 15:-15, 2:-2] = True
for r in np.unique(d.regions):
    sel = binary_erosion(d.regions == r, np.ones((3, 3, 1))) & mid
    print(r, int(sel.sum()), "shear", round(float(np.sqrt(sh[sel].mean() / den[sel].mean())), 3),
          "pressure", round(float(np.sqrt(gp[sel].mean() / den[sel].mean())), 3))
