"""Relative L2 difference of u between the tuning phantom (10 mm disk at 10 kPa) and the same
with the disk at 7.69 kPa (67 % contrast), per frequency: whole volume, and within 5 mm of the disk."""
import numpy as np, helmholtz_pinn as hp
from scipy.ndimage import binary_dilation
a = hp.load("data/tuning/four-target_volume_clean.npz"); b = hp.load("data/tuning/four-target-soft10_volume_clean.npz")
fine = hp.load("data/tuning/four-target-fine_volume_clean.npz")
near = binary_dilation(a.regions == 3, np.ones((11, 11, 1)))
def rel(x, y, sel):
    return [round(float(np.sqrt((np.abs(x[f][:, sel] - y[f][:, sel]) ** 2).sum() / (np.abs(y[f][:, sel]) ** 2).sum())) * 100, 2) for f in range(3)]
all_ = np.ones(a.grid, bool)
print("disk 7.69 vs 10 kPa: volume", rel(b.u, a.u, all_), "near disk (<=5 mm)", rel(b.u, a.u, near))
print("default vs fine mesh: volume", rel(a.u, fine.u, all_), "near disk", rel(a.u, fine.u, near))
