"""How much the tuning volume's FEM field moves between the default mesh (8 cubes per
wavelength, 2.17 mm) and the fine one (10, 1.73 mm): relative L2 difference of u, per
frequency, inside each target, in a 3-voxel ring around it, and in the background away
from targets and faces. CPU; argv: default.npz fine.npz."""
import sys
import numpy as np
from scipy import ndimage
import helmholtz_pinn as hp

a, b = hp.load(sys.argv[1]), hp.load(sys.argv[2])
assert a.u.shape == b.u.shape and np.array_equal(a.regions, b.regions)
reg = a.regions
inner = np.zeros(reg.shape, bool); inner[5:-5, 5:-5, :] = True
sets = {"all": np.ones(reg.shape, bool)}
for r in sorted(set(np.unique(reg)) - {1}):
    t = reg == r
    ring = ndimage.binary_dilation(t, np.ones((7, 7, 1), bool)) & ~t
    sets[f"target {r}"], sets[f"ring {r}"] = t, ring
far = ~ndimage.binary_dilation(reg != 1, np.ones((11, 11, 1), bool)) & inner
sets["background, away from targets and faces"] = far
for name, sel in sets.items():
    d = [np.linalg.norm(b.u[f][:, sel] - a.u[f][:, sel]) / np.linalg.norm(b.u[f][:, sel]) for f in range(a.n_freq)]
    print(f"{name:42s} " + " ".join(f"{100 * x:5.1f} %" for x in d), f"({int(sel.sum())} voxels)")
