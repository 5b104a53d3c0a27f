"""Run from the repository root after blur.py 1, 1.5 and 2 (argv: 1 1.5 2). Relative L2 difference of u: the tuning phantom against the same with G' blurred
(sigma mm), and against the fine mesh, per frequency: whole volume and within 5 mm of the
10 mm disk; and the region contrasts of the blurred G' at the voxel centres."""
import sys, numpy as np, helmholtz_pinn as hp
from scipy.ndimage import binary_dilation
a = hp.load("data/tuning/four-target_volume_clean.npz")
fine = hp.load("data/tuning/four-target-fine_volume_clean.npz")
near = binary_dilation(a.regions == 3, np.ones((11, 11, 1)))
def rel(x, y, sel):
    return [round(float(np.sqrt((np.abs(x[f][:, sel] - y[f][:, sel]) ** 2).sum() / (np.abs(y[f][:, sel]) ** 2).sum())) * 100, 2) for f in range(3)]
all_ = np.ones(a.grid, bool)
print("default vs fine mesh: volume", rel(a.u, fine.u, all_), "near 10 mm disk", rel(a.u, fine.u, near))
for s in sys.argv[1:]:
    b = hp.load(f"data/tuning/four-target-blur{s}_volume_clean.npz")
    print(f"sharp vs blurred sigma {s} mm: volume", rel(b.u, a.u, all_), "near 10 mm disk", rel(b.u, a.u, near))
# The region contrasts (medians, 20-10-6-4 mm) of the true G' blurred in-plane on the voxels.
from scipy.ndimage import gaussian_filter
g = np.real(a.mu[0]); bg = np.median(g[a.regions == 1])
for s in [0.5, 1.0, 1.5, 2.0]:
    b = gaussian_filter(g, (s, s, 0))
    print(f"contrast of the truth blurred by sigma {s} mm:", [round(100 * (np.median(b[a.regions == k]) - bg) / (np.median(g[a.regions == k]) - bg)) for k in (2, 3, 4, 5)])
