"""Weak form, for vector data: the elastic wave equation against divergence-free test fields.

For a test field v with div v = 0 and v = 0 on the boundary of a patch P, integrating the
Navier-Cauchy equation div(mu (grad u + grad u^T)) + grad p + rho omega^2 u = 0 against v
by parts leaves, with eps(u) = (grad u + grad u^T) / 2,

    integral_P [ rho omega^2 u . v - 2 mu eps(u) : eps(v) ] dx = 0:

the pressure term -p div v drops out, so no pressure field is fitted (aux = 0), and only
grad u and the values of mu appear (no second derivatives, no grad mu). For v = curl(psi
e_k) it reads integral_P psi (curl f)_k dx = 0, f the Navier-Cauchy left-hand side: the
curl of the equation averaged with the bump psi, blind to compressional waves.

Patches: P = c + h [-1, 1]^d around each sampled voxel c, h = :data:`HALF_WIDTH` shortest
shear wavelengths 2 pi / sqrt(max_f kappa_f) (at mu = mu_ref; 1.5 voxels on 1 mm data at
100 Hz and 3 kPa, whose wavelength is 17 mm); tensor Gauss-Legendre quadrature of
:data:`ORDER` points per axis (the centre added with weight 0 where it is not a node: the
data term reads u there). The default PDE margin is the same half-width
(``plan.PDE_MARGIN``), so in-plane a patch stays on the mask's voxels; through-plane (3-D,
axis 2) it may reach h past the first and last slice.

Test fields, from the bumps psi_p(s) = prod_j (1 - s_j^2)^p (they and their gradients
vanish on the boundary of [-1, 1]^d), derivatives in closed form:
- volumes: row k tests v_k = curl(psi_2 e_k), k = x, y, z;
- 2-D slices of 3-D motion (d_z = 0, as :mod:`~helmholtz_pinn.pinn.forms.navier`): row 0
  v = curl(psi_2 e_z) = (d_y psi_2, -d_x psi_2, 0), row 1 v = curl(psi_3 e_z) (the same
  in-plane curl of the equation, weighted closer to the centre) and, for a through-plane
  component (C = 3), row 2 v = (0, 0, psi_2), divergence-free when d_z = 0: the scalar
  weak form integral [ rho omega^2 u_z psi_2 - mu grad u_z . grad psi_2 ] dx = 0 of
  div(mu grad u_z) + rho omega^2 u_z = 0.
ORDER integrates every v and grad v exactly (polynomials of degree <= 6 per axis in 2-D,
<= 4 in 3-D), so integral eps(v) = 0 and, for the curl fields, integral v = 0 hold on the
nodes: a constant strain in a constant mu, or a constant u in a curl row, gives exactly 0.

Nondimensional: components in one unit per frequency, U = scale u' (``Fields.scale``, as
navier.py), x = c + h s (so grad_x v = grad_s v / h), and the row of test field v is

    r_v = sum_q w_q [ U_q . v_q - 2 mu'_q eps(U_q) : eps_s(v_q) / (h kappa_f) ] / N_v
        ~ integral_P (div(sigma') / kappa_f + U) . v dx / (h^d N_v),
    N_v = ( mean_n sum_p | sum_q w_q exp(i k h n . s_q) p . v_q |^2 )^(1/2),

N_v being the same inertia sum for unit shear waves p exp(i k n . x) at the reference
wavenumber k = sqrt(max_f kappa_f) (k h = 2 pi HALF_WIDTH), n over the directions to a
voxel's neighbours, p over the polarisations perpendicular to n (:func:`wave_response`).
So a relative error e of mu on such a wave leaves |r| ~ e |U|, as in the strong forms,
and every row counts alike. Row k is then divided by max(scale_k, SCALE_MIN) as in
navier.py (the noise weight w_fk of the loss then weighs it by the inverse noise variance
of component k).
"""

import itertools

import jax.numpy as jnp
import numpy as np
from numpy.polynomial import Polynomial

from helmholtz_pinn.pinn.forms import Fields, Form, Stencil
from helmholtz_pinn.pinn.forms.navier import SCALE_MIN
from helmholtz_pinn.pinn.model import matmul_precision

HALF_WIDTH = 1 / 12  # patch half-width h, in shortest shear wavelengths
ORDER = {2: 4, 3: 3}  # Gauss-Legendre points per axis: 16 (+ the centre) in 2-D, 27 in 3-D
# (1 - s^2)^2 and (1 - s^2)^3: they and their derivatives vanish at s = +-1
BUMP, BUMP_3 = Polynomial([1.0, 0.0, -1.0]) ** 2, Polynomial([1.0, 0.0, -1.0]) ** 3
# Levi-Civita symbol: LEVI[i, j, k] = epsilon_ijk, so curl(a e_k)_i = LEVI[i, j, k] d_j a
LEVI = np.zeros((3, 3, 3))
LEVI[[0, 1, 2], [1, 2, 0], [2, 0, 1]] = 1.0
LEVI[[1, 2, 0], [0, 1, 2], [2, 0, 1]] = -1.0


def gauss(ndim: int, order: int) -> Stencil:
    """Tensor Gauss-Legendre quadrature on [-1, 1]^ndim, ``order`` points per axis, the
    centre first (with weight 0 where it is not a node, even ``order``)."""
    nodes, weights = np.polynomial.legendre.leggauss(order)
    grid = np.meshgrid(*[nodes] * ndim, indexing="ij")
    offsets = np.stack([g.ravel() for g in grid], axis=-1)
    w = np.prod(np.meshgrid(*[weights] * ndim, indexing="ij"), axis=0).ravel()
    centre = np.all(offsets == 0, axis=1)
    if not centre.any():
        return Stencil(np.concatenate([np.zeros((1, ndim)), offsets]), np.append(0.0, w))
    first = np.argsort(~centre, kind="stable")
    return Stencil(offsets[first], w[first])


def stencil(ndim: int) -> Stencil:
    """The form's quadrature: :func:`gauss` of :data:`ORDER` points per axis."""
    return gauss(ndim, ORDER[ndim])


def half_width(kappa, wavelengths: float = HALF_WIDTH):
    """h = wavelengths 2 pi / sqrt(max_f kappa_f), nondimensional (kappa (F,)): that many
    shortest shear wavelengths (at mu' = 1)."""
    return wavelengths * 2 * jnp.pi / jnp.sqrt(jnp.max(kappa))


def stream_jet(offsets: np.ndarray, polys: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """psi(s) = prod_j g_j(s_j) (1-D polynomials ``polys``, one per axis) at offsets s
    (Q, d): value (Q,), gradient (Q, 3) and Hessian (Q, 3, 3) in three axes (zero along
    the axes past d: d_z = 0 on slices)."""
    n, d = offsets.shape
    b = [[g.deriv(m)(offsets[:, j]) for m in range(3)] for j, g in enumerate(polys)]

    def derivative(*axes):
        return np.prod([b[j][axes.count(j)] for j in range(d)], axis=0)

    grad, hess = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i in range(d):
        grad[:, i] = derivative(i)
        for j in range(d):
            hess[:, i, j] = derivative(i, j)
    return derivative(), grad, hess


def curl_field(grad: np.ndarray, hess: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """v = curl(psi e_k), v_i = epsilon_ijk d_j psi (Q, 3), and its Jacobian d_m v_i
    (Q, 3 (i), 3 (m))."""
    return grad @ LEVI[:, :, k].T, np.einsum("ij,qmj->qim", LEVI[:, :, k], hess)


def v_fields(offsets: np.ndarray, n_comp: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows' test fields at the patch offsets s (Q, d) (module docstring): v (Q, R, C)
    and their Jacobians d v_i / d s_m (Q, R, C (i), C (m)), R = C rows."""
    d = offsets.shape[1]
    psi, grad, hess = stream_jet(offsets, [BUMP] * d)
    if d == 3:
        fields = [curl_field(grad, hess, k) for k in range(3)]
    else:
        _, grad_3, hess_3 = stream_jet(offsets, [BUMP_3] * d)
        fields = [curl_field(grad, hess, 2), curl_field(grad_3, hess_3, 2)]
        if n_comp == 3:
            v, jac = np.zeros((len(offsets), 3)), np.zeros((len(offsets), 3, 3))
            v[:, 2], jac[:, 2, :] = psi, grad
            fields.append((v, jac))
    v = np.stack([f[0] for f in fields], axis=1)[..., :n_comp]
    jac = np.stack([f[1] for f in fields], axis=1)[..., :n_comp, :n_comp]
    return v, jac


def directions(ndim: int) -> np.ndarray:
    """Unit vectors to a voxel's neighbours, one of each +-pair: (4, 2) or (13, 3)."""
    steps = np.array(list(itertools.product([-1, 0, 1], repeat=ndim)), float)
    half = steps[len(steps) // 2 + 1 :]
    return half / np.linalg.norm(half, axis=1, keepdims=True)


def wave_response(quad: Stencil, n_comp: int, kh: float) -> np.ndarray:
    """N_v (R,): each row's inertia term sum_q w_q p . v_q exp(i kh n . s_q) for unit shear
    waves p exp(i k n . x), RMS over the :func:`directions` n, root-sum-square over the
    polarisations p perpendicular to n (C components)."""
    v, _ = v_fields(quad.offsets, n_comp)
    d = quad.offsets.shape[1]
    power = np.zeros(v.shape[1])
    for n in directions(d):
        n_c = np.pad(n, (0, n_comp - d))
        shear = np.linalg.svd(n_c[None])[2][1:]  # (C - 1, C): the polarisations
        phase = quad.weights * np.exp(1j * kh * quad.offsets @ n)  # (Q,)
        power += np.sum(np.abs(np.einsum("q,qri,pi->pr", phase, v, shear)) ** 2, axis=0)
    return np.sqrt(power / len(directions(d)))


def patch_residual(f: Fields, kappa, quad: Stencil, wavelengths: float = HALF_WIDTH):
    """r (N, F, C) on patches of half-width h = :func:`half_width` (kappa, wavelengths) with
    quadrature ``quad``, for u (N, Q, F, C), grad_u (d, N, Q, F, C), mu (N, Q, F), scale
    (F, C) (module docstring)."""
    d, n_comp = f.grad_u.shape[0], f.u.shape[-1]
    real = jnp.real(f.u).dtype
    v, jac = (jnp.asarray(a, real) for a in v_fields(quad.offsets, n_comp))
    w = jnp.asarray(quad.weights, real)
    norm = jnp.asarray(wave_response(quad, n_comp, 2 * np.pi * wavelengths), real)
    h = half_width(kappa, wavelengths)
    s = f.scale[None, None]  # (1, 1, F, C)
    u, grad = f.u * s, f.grad_u * s[None]
    grad = jnp.concatenate([grad, jnp.zeros((n_comp - d,) + grad.shape[1:], grad.dtype)])
    jac_u = jnp.moveaxis(grad, 0, -1)  # (N, Q, F, C (i), C (m)): d_m U_i
    eps_u = (jac_u + jnp.swapaxes(jac_u, -1, -2)) / 2
    eps_v = (jac + jnp.swapaxes(jac, -1, -2)) / 2
    precision = matmul_precision()
    stiff = 2 * jnp.einsum("q,nqf,nqfim,qrim->nfr", w, f.mu, eps_u, eps_v, precision=precision)
    inertia = jnp.einsum("q,nqfi,qri->nfr", w, u, v, precision=precision)
    r = (inertia - stiff / (h * kappa[None, :, None])) / norm[None, None, :]
    return r / jnp.maximum(f.scale[None], SCALE_MIN)


def residual(f: Fields, kappa):
    """r (N, F, C) on the patches of :func:`stencil` and :func:`half_width` (module
    docstring); the fields have a patch axis (:func:`helmholtz_pinn.pinn.forms.with_patch_axis`)."""
    if f.u.ndim != 4:
        raise ValueError(
            "the weak form integrates over patches: it needs fields of shape (N, Q, F, C) at "
            f"the points of train.patch_points; got u of shape {f.u.shape}"
        )
    return patch_residual(f, kappa, stencil(f.grad_u.shape[0]))


FORM = Form(
    name="weak",
    equation="integral_P [rho omega^2 u . v - 2 mu eps(u) : eps(v)] dx = 0, div v = 0",
    needs=frozenset({"grad_u"}),
    residual=residual,
    components=(2, 3),
    vector=True,
    stencil=stencil,
    half_width=half_width,
)
