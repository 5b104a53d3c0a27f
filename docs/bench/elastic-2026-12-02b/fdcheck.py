"""Direct FD check of the FEM data: local G' from curl u, unsmoothed, profile by distance from faces."""
import sys, numpy as np, helmholtz_pinn as hp
d = hp.load(sys.argv[1])
h = d.spacing
u = d.u.astype(np.complex128)  # (F, 3, nx, ny, nz)
def grad(a, ax): return np.gradient(a, h[ax], axis=ax - 3 + a.ndim, edge_order=2)
num = 0; den = 0
for f in range(d.n_freq):
    w2 = d.rho * (2 * np.pi * d.frequency[f]) ** 2
    ux, uy, uz = u[f]
    q = [grad(uz, 1) - grad(uy, 2), grad(ux, 2) - grad(uz, 0), grad(uy, 0) - grad(ux, 1)]
    for qc in q:
        lap = sum(np.gradient(np.gradient(qc, h[a], axis=a, edge_order=2), h[a], axis=a, edge_order=2) for a in range(3))
        num = num + (-w2) * np.conj(lap) * qc
        den = den + np.abs(lap) ** 2
mu = num / den
true = np.real(d.mu if d.mu.ndim == 3 else d.mu.mean(0))
e = (np.real(mu) - true) / true
bg = d.regions == 1
nx, ny, nz = e.shape; b = 10
def med(sel):
    v = e[sel][bg[sel]]; return round(float(np.median(v)) * 100, 1)
print("x0", [med((k, slice(b, ny - b), slice(None))) for k in range(8)])
print("x1", [med((nx - 1 - k, slice(b, ny - b), slice(None))) for k in range(8)])
print("y0", [med((slice(b, nx - b), k, slice(None))) for k in range(8)])
print("y1", [med((slice(b, nx - b), ny - 1 - k, slice(None))) for k in range(8)])
print("z ", [med((slice(b, nx - b), slice(b, ny - b), k)) for k in range(nz)])
print("interior median", med((slice(10, -10), slice(10, -10), slice(2, -2))))
