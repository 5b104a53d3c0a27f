"""|grad p| implied by the FEM data (homogeneous background: grad p = -(mu Lap u + rho w^2 u)) against |rho w^2 u|, by distance from faces."""
import sys, numpy as np, helmholtz_pinn as hp
d = hp.load(sys.argv[1]); h = d.spacing
mu = d.mu if d.mu.ndim == 4 else np.broadcast_to(d.mu, (d.n_freq, *d.grid))
bg = d.regions == 1
num = 0; den = 0
for f in range(d.n_freq):
    w2 = d.rho * (2 * np.pi * d.frequency[f]) ** 2
    for c in range(3):
        uc = d.u[f, c].astype(np.complex128)
        lap = sum(np.gradient(np.gradient(uc, h[a], axis=a, edge_order=2), h[a], axis=a, edge_order=2) for a in range(3))
        gp = mu[f] * lap + w2 * uc
        num = num + np.abs(gp) ** 2; den = den + np.abs(w2 * uc) ** 2
nx, ny, nz = d.grid; b = 10
def rat(sel): return round(float(np.sqrt(num[sel][bg[sel]].mean() / den[sel][bg[sel]].mean())), 3)
print("x0", [rat((k, slice(b, ny - b), slice(None))) for k in range(10)])
print("y1", [rat((slice(b, nx - b), ny - 1 - k, slice(None))) for k in range(10)])
print("z ", [rat((slice(b, nx - b), slice(b, ny - b), k)) for k in range(nz)])
print("interior", rat((slice(15, -15), slice(15, -15), slice(2, -2))))
