"""How well can a blurred modulus map plus a free pressure explain the clean FEM data?
For G' = the truth and = the truth blurred in-plane (sigma mm), the Navier residual without
pressure r = div(mu (grad u + grad u^T)) + rho w^2 u (central differences on the voxels) is
split by least squares into a gradient (what a free pressure absorbs, r + grad p) and the
rest; printed: the rest's RMS over the interior (2 voxels from the in-plane faces, 1 from
the z faces), in the background and within 5 mm of the 10 mm disk, relative to |rho w^2 u|."""
import numpy as np, helmholtz_pinn as hp
from scipy import sparse
from scipy.sparse.linalg import lsqr
from scipy.ndimage import gaussian_filter, binary_dilation
d = hp.load("data/tuning/four-target_volume_clean.npz")
h = d.spacing; grid = d.grid; n = int(np.prod(grid))
def D(k):  # central difference along axis k (one-sided at the ends), sparse n x n
    m = grid[k]
    e = np.ones(m)
    A = sparse.diags([-e[:-1], e[:-1]], [-1, 1], shape=(m, m)).tolil() / (2 * h[k])
    A[0, :2] = np.array([-1, 1]) / h[k]; A[-1, -2:] = np.array([-1, 1]) / h[k]
    mats = [sparse.identity(g) for g in grid]; mats[k] = A.tocsr()
    return sparse.kron(sparse.kron(mats[0], mats[1]), mats[2]).tocsr()
Ds = [D(k) for k in range(3)]
G = sparse.vstack(Ds).tocsr()
inner = np.zeros(grid, bool); inner[2:-2, 2:-2, 1:-1] = True
near = binary_dilation(d.regions == 3, np.ones((11, 11, 1))) & inner
bg = (d.regions == 1) & inner & ~near
def rest(gprime, f):
    w = 2 * np.pi * d.frequency[f]
    mu = (gprime + 1j * w * 1.0).ravel()
    u = d.u[f].reshape(3, n).astype(complex)
    grad = [[Ds[j] @ u[i] for j in range(3)] for i in range(3)]
    r = np.stack([sum(Ds[j] @ (mu * (grad[i][j] + grad[j][i])) for j in range(3)) + d.rho * w**2 * u[i] for i in range(3)])
    sel = np.repeat(inner.ravel()[None], 3, 0).ravel()
    Gs = G[sel]
    p = lsqr(Gs, -r.ravel()[sel], atol=1e-10, btol=1e-10, iter_lim=3000)[0]
    q = (r.ravel() + G @ p).reshape(3, *grid)
    inert = np.abs(d.rho * w**2 * u).reshape(3, *grid)
    rel = lambda m: float(np.sqrt((np.abs(q[:, m]) ** 2).sum() / (inert[:, m] ** 2).sum()))
    r3 = r.reshape(3, *grid)
    raw = lambda m: float(np.sqrt((np.abs(r3[:, m]) ** 2).sum() / (inert[:, m] ** 2).sum()))
    return [round(rel(bg), 3), round(rel(near), 3), round(raw(near), 3)]
true = np.real(d.mu[0])
import sys
for s in map(float, sys.argv[1:]):
    g = true if s == 0 else gaussian_filter(true, (s, s, 0), mode="nearest")
    print(f"sigma {s} mm:", [rest(g, f) for f in range(3)], flush=True)
