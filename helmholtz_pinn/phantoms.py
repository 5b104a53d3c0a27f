"""Forward solver and built-in phantoms: ground-truth MRE wave fields in 2-D.

Time convention: the physical displacement is ``Re(u(x) exp(i omega t))``. A Voigt
solid has the complex shear modulus ``mu = G' + i omega eta`` (``G'`` storage modulus
in Pa, ``eta`` viscosity in Pa s, ``omega = 2 pi f`` in rad/s), and every displacement
component obeys the heterogeneous Helmholtz equation

    div(mu grad u) + rho omega^2 u = f

(``rho`` in kg/m^3, ``f`` a body-force density). :func:`solve_helmholtz` discretises it
with second-order finite differences; :func:`simulate` wraps a :class:`Phantom` in an
absorbing layer (a perfectly matched layer), solves on an oversampled grid and samples
the field back at the voxel centres; :func:`simulate_phantom` is the entry point of
``helmholtz-pinn simulate``; :func:`add_noise` adds noise at a given noise-to-signal dB.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import math
import pathlib
from collections.abc import Callable, Sequence

import numpy as np
import scipy
from scipy import sparse
from scipy.sparse import linalg as splinalg

from helmholtz_pinn.data import Dataset

DEFAULT_FREQUENCIES: tuple[float, ...] = (60.0, 80.0, 100.0)
DEFAULT_COMPONENTS = 2
DRIVE_EDGES = ("top", "left", "bottom", "right")  # component c is driven from edge c


# --------------------------------------------------------------------------- solver


def _pair(spacing: float | Sequence[float]) -> tuple[float, float]:
    hx, hy = np.broadcast_to(np.asarray(spacing, dtype=float), (2,))
    if not (hx > 0 and hy > 0):
        raise ValueError(f"spacing must be positive (m); got {spacing!r}")
    return float(hx), float(hy)


def _harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Face modulus ``2ab / (a + b)``: exact flux continuity across a material jump."""
    return 2.0 * a * b / (a + b)


def _interior_operator(mu_x: np.ndarray, mu_y: np.ndarray, k2: np.ndarray, hx: float, hy: float):
    """Rows of ``d/dx(mu_x du/dx) + d/dy(mu_y du/dy) + k2 u`` for the interior nodes,
    columns for all nodes (CSC, shape ``(n_interior, nx * ny)``).

    5-point stencil; the coefficients are averaged onto the cell faces by the harmonic
    mean of the two adjacent nodes. ``mu_x = mu_y = mu`` is ``div(mu grad u) + k2 u``.
    """
    nx, ny = mu_x.shape
    node = np.arange(nx * ny).reshape(nx, ny)
    row = np.arange((nx - 2) * (ny - 2)).reshape(nx - 2, ny - 2)
    fx = _harmonic_mean(mu_x[:-1, :], mu_x[1:, :]) / hx**2  # face (i + 1/2, j)
    fy = _harmonic_mean(mu_y[:, :-1], mu_y[:, 1:]) / hy**2  # face (i, j + 1/2)
    east, west = fx[1:, 1:-1], fx[:-1, 1:-1]
    north, south = fy[1:-1, 1:], fy[1:-1, :-1]
    centre = k2[1:-1, 1:-1] - (east + west + north + south)
    cols = [node[1:-1, 1:-1], node[2:, 1:-1], node[:-2, 1:-1], node[1:-1, 2:], node[1:-1, :-2]]
    vals = np.concatenate([v.ravel() for v in (centre, east, west, north, south)])
    ij = (np.tile(row.ravel(), 5), np.concatenate([c.ravel() for c in cols]))
    return sparse.csc_matrix((vals, ij), shape=(row.size, nx * ny))


@functools.cache
def _scipy_openblas() -> ctypes.CDLL | None:
    """The OpenBLAS bundled with scipy's wheels (which SuperLU calls), if there is one."""
    root = pathlib.Path(scipy.__file__).parent
    for path in [*root.parent.glob("scipy.libs/libscipy_openblas*"), *root.glob(".dylibs/lib*")]:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        if hasattr(lib, "scipy_openblas_set_num_threads"):
            return lib
    return None


@contextlib.contextmanager
def _serial_blas():
    """One BLAS thread for the sparse LU: SuperLU calls BLAS on small dense blocks where
    threads only add synchronisation, and threaded OpenBLAS busy-waits when other
    processes hold the cores (four-target: 258 s instead of 4 s on a loaded 2-core box)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        lib = _scipy_openblas()
        if lib is None:
            yield
            return
        before = lib.scipy_openblas_get_num_threads()
        lib.scipy_openblas_set_num_threads(1)
        try:
            yield
        finally:
            lib.scipy_openblas_set_num_threads(before)
    else:
        with threadpool_limits(1, user_api="blas"):
            yield


def _solve(mu_x, mu_y, k2, hx: float, hy: float, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Dirichlet problem for :func:`_interior_operator`: ``f`` is ``(K, nx, ny)``, the
    ring of ``g`` ``(nx, ny)`` the boundary values; one LU factorisation for all K."""
    grid = g.shape
    ring = np.ones(grid, bool)
    ring[1:-1, 1:-1] = False
    op = _interior_operator(mu_x, mu_y, k2, hx, hy)
    a_ii, a_ib = op[:, ~ring.ravel()], op[:, ring.ravel()]
    rhs = f[:, 1:-1, 1:-1].reshape(len(f), -1).T - (a_ib @ g[ring])[:, None]
    with _serial_blas():
        u_int = splinalg.splu(a_ii.tocsc()).solve(np.ascontiguousarray(rhs))
    u = np.broadcast_to(g, f.shape).copy()
    u[:, 1:-1, 1:-1] = u_int.T.reshape(len(f), grid[0] - 2, grid[1] - 2)
    return u


def solve_helmholtz(
    mu: np.ndarray,
    rho: float | np.ndarray,
    omega: float,
    spacing: float | Sequence[float],
    source: np.ndarray | None = None,
    dirichlet: np.ndarray | None = None,
) -> np.ndarray:
    """Solve ``div(mu grad u) + rho omega^2 u = source`` on a 2-D node grid.

    Finite differences, second order: 5-point stencil with ``mu`` averaged onto the
    cell faces by the harmonic mean ``2 mu_a mu_b / (mu_a + mu_b)`` (the flux-continuous
    choice at material jumps; second order where ``mu`` is smooth). The outer ring of
    nodes is a Dirichlet boundary: ``u = dirichlet`` there, or ``u = 0`` when it is None.
    One sparse LU factorisation (``scipy.sparse.linalg.splu``) serves every right-hand side.

    Args:
      mu: complex shear modulus at the nodes, Pa, shape ``(nx, ny)``.
      rho: density, kg/m^3, scalar or ``(nx, ny)`` (complex values act as damping).
      omega: angular frequency, rad/s.
      spacing: node spacing ``(hx, hy)`` (or one number), m.
      source: right-hand side ``f`` (N/m^3 per unit displacement), ``(nx, ny)`` or a
        stack ``(K, nx, ny)`` of independent right-hand sides; None means zero.
      dirichlet: ``(nx, ny)`` array whose outer ring gives the boundary values (the
        interior is ignored); None means ``u = 0`` on the ring.

    Returns:
      complex128 ``u`` with the shape of ``source`` (``(nx, ny)`` when it is None).
    """
    mu = np.asarray(mu, dtype=complex)
    if mu.ndim != 2 or min(mu.shape) < 3:
        raise ValueError(f"mu must be a 2-D grid of at least 3x3 nodes; got shape {mu.shape}")
    hx, hy = _pair(spacing)
    grid = mu.shape
    k2 = np.broadcast_to(np.asarray(rho, dtype=complex) * omega**2, grid)
    f = np.zeros(grid, complex) if source is None else np.asarray(source, dtype=complex)
    if f.shape[-2:] != grid or f.ndim not in (2, 3):
        raise ValueError(f"source must have shape {grid} or (K, *{grid}); got {f.shape}")
    g = np.zeros(grid, complex) if dirichlet is None else np.asarray(dirichlet, dtype=complex)
    if g.shape != grid:
        raise ValueError(f"dirichlet must have shape {grid}; got {g.shape}")

    return _solve(mu, mu, k2, hx, hy, f.reshape(-1, *grid), g).reshape(f.shape)


# --------------------------------------------------------------------------- phantoms


@dataclasses.dataclass(frozen=True)
class Phantom:
    """A 2-D tissue layout on the data voxel grid.

    Attributes:
      name: label used in file names and reports.
      storage: storage modulus ``G'``, Pa, shape ``(nx, ny)``.
      viscosity: Voigt viscosity ``eta``, Pa s, shape ``(nx, ny)``.
      regions: integer labels (1 = background, 2.. = targets), shape ``(nx, ny)``.
      spacing: voxel size ``(hx, hy)``, m.
      rho: density, kg/m^3.
    """

    name: str
    storage: np.ndarray
    viscosity: np.ndarray
    regions: np.ndarray
    spacing: tuple[float, float]
    rho: float = 1000.0

    def __post_init__(self) -> None:
        shape = np.shape(self.storage)
        if len(shape) != 2:
            raise ValueError(f"phantom {self.name!r}: storage must be 2-D; got shape {shape}")
        for key in ("viscosity", "regions"):
            got = np.shape(getattr(self, key))
            if got != shape:
                raise ValueError(f"phantom {self.name!r}: {key} must have shape {shape}; got {got}")
        if not np.all(np.asarray(self.storage) > 0) or np.any(np.asarray(self.viscosity) < 0):
            raise ValueError(f"phantom {self.name!r}: need storage > 0 Pa and viscosity >= 0 Pa s")
        if not self.rho > 0:
            raise ValueError(f"phantom {self.name!r}: rho must be > 0 kg/m^3; got {self.rho!r}")
        object.__setattr__(self, "spacing", _pair(self.spacing))

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(np.shape(self.storage))

    def modulus(self, frequency: float) -> np.ndarray:
        """Complex modulus ``mu = G' + i 2 pi f eta`` in Pa at ``frequency`` Hz."""
        return self.storage + 1j * (2 * np.pi * frequency) * self.viscosity


def _centres(
    shape: tuple[int, int], spacing: float | Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Voxel-centre coordinates ``x = (i + 1/2) hx``, ``y = (j + 1/2) hy`` in m, ``ij`` layout."""
    hx, hy = _pair(spacing)
    return np.meshgrid(
        (np.arange(shape[0]) + 0.5) * hx, (np.arange(shape[1]) + 0.5) * hy, indexing="ij"
    )


def _phantom(name, storage, regions, spacing, viscosity, rho) -> Phantom:
    eta = np.broadcast_to(np.asarray(viscosity, float), storage.shape).copy()
    return Phantom(name, storage.astype(float), eta, regions.astype(np.int32), spacing, rho)


def homogeneous(shape=(64, 64), spacing=1e-3, storage=3e3, viscosity=1.0, rho=1000.0) -> Phantom:
    """Uniform medium: ``G'`` = ``storage`` Pa, ``eta`` = ``viscosity`` Pa s, regions all 1."""
    return _phantom(
        "homogeneous", np.full(shape, storage, float), np.ones(shape), spacing, viscosity, rho
    )


def four_target(
    shape=(80, 100),
    spacing=1e-3,
    background=3e3,
    target=10e3,
    radii=(10e-3, 5e-3, 3e-3, 2e-3),
    centres=((0.3125, 0.3), (0.3125, 0.7), (0.7, 0.3), (0.7, 0.7)),
    viscosity=1.0,
    rho=1000.0,
) -> Phantom:
    """BIOQIC-like box: disks of ``target`` Pa (radii in m; centres as fractions of the
    field of view) in a ``background`` Pa matrix. Regions 2, 3, .. follow ``radii``."""
    x, y = _centres(shape, spacing)
    (hx, hy), (nx, ny) = _pair(spacing), shape
    lx, ly = nx * hx, ny * hy
    disks = [(cx * lx, cy * ly, r) for (cx, cy), r in zip(centres, radii, strict=True)]
    for i, (cx, cy, r) in enumerate(disks):
        if min(cx, cy, lx - cx, ly - cy) < r + 2 * max(hx, hy):
            raise ValueError(
                f"four-target: disk {i} (radius {r} m) does not fit {lx}x{ly} m with a margin"
            )
        for cx2, cy2, r2 in disks[:i]:
            if math.hypot(cx - cx2, cy - cy2) < r + r2 + max(hx, hy):
                raise ValueError(f"four-target: disk {i} (radius {r} m) overlaps another disk")
    regions = np.ones(shape, int)
    for label, (cx, cy, r) in enumerate(disks, start=2):
        regions[(x - cx) ** 2 + (y - cy) ** 2 <= r**2] = label
    storage = np.where(regions > 1, target, background)
    return _phantom("four-target", storage, regions, spacing, viscosity, rho)


def smooth(
    shape=(80, 100), spacing=1e-3, background=3e3, gradient=600.0, viscosity=1.0, rho=1000.0
) -> Phantom:
    """Smooth heterogeneous layout, about 2-8 kPa: ``background`` plus a linear ramp of
    ``gradient`` Pa across x and Gaussian bumps (two stiff, one soft). Regions: 2 where
    ``G' > background + 1.5 kPa`` (stiff), 3 where ``G' < background - 0.5 kPa`` (soft)."""
    x, y = _centres(shape, spacing)
    lx, ly = shape[0] * _pair(spacing)[0], shape[1] * _pair(spacing)[1]
    s, t = x / lx, y / ly
    bumps = [(0.35, 0.3, 0.12, 4.5e3), (0.65, 0.7, 0.09, 3.0e3), (0.72, 0.25, 0.1, -1.2e3)]
    storage = background + gradient * (s - 0.5)
    for cx, cy, width, amp in bumps:
        storage = storage + amp * np.exp(
            -((s - cx) ** 2 * lx**2 + (t - cy) ** 2 * ly**2) / (2 * (width * min(lx, ly)) ** 2)
        )
    regions = np.ones(shape, int)
    regions[storage > background + 1.5e3] = 2
    regions[storage < background - 0.5e3] = 3
    return _phantom("smooth", storage, regions, spacing, viscosity, rho)


def stripes(
    shape=(80, 100),
    spacing=1e-3,
    background=3e3,
    stiff=9e3,
    widths=(16e-3, 8e-3, 4e-3, 2e-3),
    gap=10e-3,
    viscosity=1.0,
    rho=1000.0,
) -> Phantom:
    """Resolution bars: stiff layers of ``widths`` m (spanning x, separated by ``gap`` m
    along y and centred in the field of view) in a ``background`` Pa matrix. Regions
    2, 3, .. follow ``widths``; useful for accuracy versus feature size."""
    _, y = _centres(shape, spacing)
    ly = shape[1] * _pair(spacing)[1]
    start = 0.5 * (ly - sum(widths) - gap * (len(widths) - 1))
    if start < gap:
        raise ValueError(f"stripes: widths {widths} with gap {gap} m do not fit {ly} m")
    regions = np.ones(shape, int)
    for label, w in enumerate(widths, start=2):
        regions[(y >= start) & (y < start + w)] = label
        start += w + gap
    storage = np.where(regions > 1, stiff, background)
    return _phantom("stripes", storage, regions, spacing, viscosity, rho)


PHANTOMS: dict[str, Callable[..., Phantom]] = {
    "homogeneous": homogeneous,
    "four-target": four_target,
    "smooth": smooth,
    "stripes": stripes,
}


def make_phantom(name: str, **overrides) -> Phantom:
    """Build the registered phantom ``name`` with keyword ``overrides`` of its defaults."""
    if name not in PHANTOMS:
        raise ValueError(f"unknown phantom {name!r}; valid names: {', '.join(PHANTOMS)}")
    return PHANTOMS[name](**overrides)


# --------------------------------------------------------------------------- simulation


def _ramp(n: int, width: int) -> np.ndarray:
    """``(d / W)^2`` on ``n`` nodes: ``d`` = distance of a node centre into an absorbing
    layer of ``W = width`` nodes at each end (0 on the ``n - 2 width`` nodes between)."""
    c = np.arange(n) + 0.5
    return (np.maximum(width - c, c - (n - width)).clip(min=0) / width) ** 2


def _line_source(
    mu: np.ndarray, rho: float, omega: float, spacing, edge: str, row: int
) -> np.ndarray:
    """Line force on node line ``row`` from ``edge`` (``top``: x = row, ``left``: y = row,
    ``bottom``/``right`` mirrored). Strength ``-2 i k mu / h`` per node launches plane
    waves of unit amplitude each way in a uniform medium (``k = omega sqrt(rho / mu)``)."""
    axis = 0 if edge in ("top", "bottom") else 1
    index = row if edge in ("top", "left") else mu.shape[axis] - 1 - row
    m = np.take(mu, index, axis=axis)
    f = np.zeros(mu.shape, complex)
    line = -2j * omega * np.sqrt(rho / m) * m / spacing[axis]
    if axis == 0:
        f[index, :] = line
    else:
        f[:, index] = line
    return f


def _sample_centres(u: np.ndarray, factor: int) -> np.ndarray:
    """Bilinear value at the coarse voxel centres of a field on ``factor``-refined voxel
    centres (the centre lies between fine nodes ``lo`` and ``hi`` of each block)."""
    lo, hi = (factor - 1) // 2, factor // 2
    return 0.25 * (
        u[..., lo::factor, lo::factor]
        + u[..., lo::factor, hi::factor]
        + u[..., hi::factor, lo::factor]
        + u[..., hi::factor, hi::factor]
    )


def _sponge_voxels(phantom: Phantom, frequencies: Sequence[float], wavelengths: float = 1.0) -> int:
    """Sponge width in data voxels: ``wavelengths`` times the longest shear wavelength
    ``sqrt(G'/rho) / f`` on the field-of-view edge (largest ``G'``, lowest ``f``)."""
    g = phantom.storage
    edge = max(g[0].max(), g[-1].max(), g[:, 0].max(), g[:, -1].max())
    wavelength = math.sqrt(edge / phantom.rho) / min(frequencies)
    return max(2, math.ceil(wavelengths * wavelength / min(phantom.spacing)))


def simulate(
    phantom: Phantom,
    frequencies: Sequence[float] = DEFAULT_FREQUENCIES,
    components: int = DEFAULT_COMPONENTS,
    *,
    oversample: int = 2,
    sponge_wavelengths: float = 1.0,
    sponge_strength: float = 6.0,
) -> Dataset:
    """Simulate a 2-D MRE acquisition of ``phantom`` at ``frequencies`` (Hz).

    Each field solves ``div(mu grad u) + rho omega^2 u = f`` with ``mu = G' + i omega eta``
    (Pa) on the phantom padded (edge values repeated) by an absorbing layer of
    ``sponge_wavelengths`` times the longest wavelength, then ``u = 0``. The layer is a
    perfectly matched layer: the coordinates normal to the edge are stretched by
    ``s = 1 - i alpha`` with ``alpha`` rising quadratically from 0 to ``sponge_strength``,
    i.e. ``d/dx(mu s_y/s_x du/dx) + d/dy(mu s_x/s_y du/dy) + rho omega^2 s_x s_y u =
    s_x s_y f``, which absorbs outgoing waves without damping waves that run along it
    (measured reflection ~1e-4 of the amplitude at the defaults). The grid is refined
    ``oversample`` times (less numerical dispersion) and the field sampled back at the
    data voxel centres. Component ``c`` is one solve, driven by a line source one data
    voxel outside the field of view along edge ``DRIVE_EDGES[c]`` (top = low x, left =
    low y, bottom, right) that launches plane waves of about unit amplitude.

    Returns:
      :class:`Dataset` with ``u`` complex64 ``(F, C, nx, ny)``, the true ``mu`` complex128
      ``(F, nx, ny)`` in Pa, ``regions``, ``rho``, all-true ``mask``.
    """
    freqs = np.asarray(frequencies, dtype=float).reshape(-1)
    if freqs.size == 0 or not np.all(freqs > 0):
        raise ValueError(f"frequencies must be positive (Hz); got {frequencies!r}")
    if not 1 <= components <= len(DRIVE_EDGES):
        raise ValueError(
            f"components must be 1..{len(DRIVE_EDGES)} (one per edge of {DRIVE_EDGES}); "
            f"got {components}"
        )
    if int(oversample) != oversample or oversample < 1:
        raise ValueError(f"oversample must be a positive integer; got {oversample!r}")
    s, nx, ny = int(oversample), *phantom.shape
    n_pad = _sponge_voxels(phantom, freqs, sponge_wavelengths)

    pad = n_pad + 1  # absorbing layer, then one undamped voxel holding the drive

    def refine(a: np.ndarray) -> np.ndarray:
        return np.pad(a, pad, mode="edge").repeat(s, 0).repeat(s, 1)

    storage, eta = refine(phantom.storage), refine(phantom.viscosity)
    h = (phantom.spacing[0] / s, phantom.spacing[1] / s)
    sx = 1 - 1j * sponge_strength * _ramp(storage.shape[0], n_pad * s)[:, None]
    sy = 1 - 1j * sponge_strength * _ramp(storage.shape[1], n_pad * s)[None, :]
    fov = (slice(None), slice(pad * s, (pad + nx) * s), slice(pad * s, (pad + ny) * s))
    row = n_pad * s  # drive in the undamped voxel just outside the field of view
    u = np.empty((freqs.size, components, nx, ny), np.complex64)
    for i, f in enumerate(freqs):
        omega = 2 * np.pi * f
        mu = storage + 1j * omega * eta
        force = np.stack(
            [_line_source(mu, phantom.rho, omega, h, e, row) for e in DRIVE_EDGES[:components]]
        )
        k2 = phantom.rho * omega**2 * sx * sy
        field = _solve(
            mu * sy / sx, mu * sx / sy, k2, *h, force * (sx * sy), np.zeros(mu.shape, complex)
        )
        u[i] = _sample_centres(field[fov], s)
    return Dataset(
        u=u,
        frequency=freqs,
        spacing=np.asarray(phantom.spacing, dtype=float),
        mask=np.ones(phantom.shape, bool),
        mu=np.stack([phantom.modulus(f) for f in freqs]).astype(np.complex128),
        regions=np.asarray(phantom.regions),
        rho=float(phantom.rho),
    )


def add_noise(u: np.ndarray, noise_db: float | None, seed: int = 0) -> np.ndarray:
    """Add circular complex Gaussian noise at ``noise_db`` dB relative to the signal.

    ``noise_db`` is the noise-to-signal power ratio in dB (the sign convention of
    ``--noise-db``): noise power = ``mean |u|^2 * 10**(noise_db / 10)``, so ``-20`` dB
    gives noise with 1 % of the signal power (SNR 20 dB), ``0`` dB equal power. The mean
    is taken per frequency and component over the grid (the axes after the first two of
    ``(F, C, *grid)``; over all axes for an array of 2 or fewer dimensions). Real and
    imaginary parts each carry half the noise power. ``noise_db=None`` returns a copy.
    Deterministic: ``numpy.random.default_rng(seed)``.
    """
    u = np.asarray(u)
    if not np.iscomplexobj(u):
        raise ValueError(f"u must be complex; got {u.dtype} {u.shape}")
    if noise_db is None:
        return u.copy()
    axes = tuple(range(2, u.ndim)) if u.ndim > 2 else tuple(range(u.ndim))
    power = np.mean(np.abs(u.astype(np.complex128)) ** 2, axis=axes, keepdims=True) * 10 ** (
        noise_db / 10
    )
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(u.shape) + 1j * rng.standard_normal(u.shape)
    return (u + np.sqrt(power / 2) * noise).astype(u.dtype)


def simulate_phantom(
    name: str,
    *,
    noise_db: float | None = None,
    seed: int = 0,
    frequencies: Sequence[float] | None = None,
    components: int | None = None,
    **overrides,
) -> Dataset:
    """Simulate built-in phantom ``name`` (``overrides`` go to its factory) and add noise
    at ``noise_db`` dB (see :func:`add_noise`); defaults: 60, 80, 100 Hz, 2 components."""
    phantom = make_phantom(name, **overrides)
    data = simulate(
        phantom,
        DEFAULT_FREQUENCIES if frequencies is None else frequencies,
        DEFAULT_COMPONENTS if components is None else components,
    )
    if noise_db is None:
        return data
    return dataclasses.replace(data, u=add_noise(data.u, noise_db, seed))
