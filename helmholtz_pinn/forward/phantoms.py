"""Built-in phantoms and simulated MRE acquisitions: ground-truth wave fields in 2-D
(or extruded to 3-D volumes).

Time convention: the physical displacement is ``Re(u(x) exp(i omega t))``. A phantom's
tissue has the complex shear modulus ``mu`` (Pa) of a viscoelastic law
(:mod:`helmholtz_pinn.laws`; the built-in phantoms are Voigt solids ``mu = G' + i omega
eta``, ``G'`` storage modulus in Pa, ``eta`` viscosity in Pa s, ``omega = 2 pi f`` in
rad/s), and every displacement component obeys the heterogeneous Helmholtz equation

    div(mu grad u) + rho omega^2 u = f

(``rho`` in kg/m^3, ``f`` a body-force density), solved by finite differences in
:mod:`helmholtz_pinn.forward.scalar_fd` (:func:`solve_helmholtz` is re-exported here).
:func:`simulate` wraps a :class:`Phantom` in an absorbing layer (a perfectly matched
layer), solves on an oversampled grid and samples the field back at the voxel centres;
:func:`simulate_phantom` is the entry point of ``helmholtz-pinn simulate``;
:func:`add_noise` adds noise at a given noise-to-signal dB.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from helmholtz_pinn import laws
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward.scalar_fd import (
    line_source,
    sample_centres,
    solve_helmholtz,
    solve_pml,
    spacing_pair,
)
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.laws import springpot, voigt

__all__ = [
    "DEFAULT_COMPONENTS",
    "DEFAULT_FREQUENCIES",
    "DRIVE_EDGES",
    "FOUR_TARGET_CENTRES",
    "FOUR_TARGET_RADII",
    "PHANTOMS",
    "Phantom",
    "add_noise",
    "four_target",
    "homogeneous",
    "make_phantom",
    "simulate",
    "simulate_phantom",
    "smooth",
    "solve_helmholtz",
    "stripes",
]

DEFAULT_FREQUENCIES: tuple[float, ...] = (60.0, 80.0, 100.0)
DEFAULT_COMPONENTS = 2
DRIVE_EDGES = ("top", "left", "bottom", "right")  # component c is driven from edge c
# four-target disks: radii in m, centres as fractions of the field of view
FOUR_TARGET_RADII = (10e-3, 5e-3, 3e-3, 2e-3)
FOUR_TARGET_CENTRES = ((0.3125, 0.3), (0.3125, 0.7), (0.7, 0.3), (0.7, 0.7))


# --------------------------------------------------------------------------- phantoms


@dataclasses.dataclass(frozen=True)
class Phantom:
    """A 2-D tissue layout on the data voxel grid.

    Attributes:
      name: label used in file names and reports.
      tissue: the parameters of one viscoelastic law (its NamedTuple in
        :mod:`helmholtz_pinn.laws`, e.g. ``Voigt(storage, viscosity)``), each a number or
        a map of shape ``(nx, ny)`` in SI units; ``mu`` is that law's modulus
        (:func:`helmholtz_pinn.laws.modulus`).
      regions: integer labels (1 = background, 2.. = targets), shape ``(nx, ny)``.
      spacing: voxel size ``(hx, hy)``, m.
      rho: density, kg/m^3.
    """

    name: str
    tissue: tuple
    regions: np.ndarray
    spacing: tuple[float, float]
    rho: float = 1000.0

    def __post_init__(self) -> None:
        shape = np.shape(self.regions)
        if len(shape) != 2:
            raise InputError(f"phantom {self.name!r}: regions must be 2-D; got shape {shape}")
        law = laws.check(self.tissue, f"phantom {self.name!r} tissue")
        maps = {}
        for key, value in zip(self.tissue._fields, self.tissue, strict=True):
            if np.ndim(value) == 0:
                continue
            try:
                maps[key] = np.broadcast_to(np.asarray(value, float), shape).copy()
            except ValueError:
                raise InputError(
                    f"phantom {self.name!r}: {law.name} {key} must be a number or a map of "
                    f"shape {shape}; got shape {np.shape(value)}"
                ) from None
        if not self.rho > 0:
            raise InputError(f"phantom {self.name!r}: rho must be > 0 kg/m^3; got {self.rho!r}")
        object.__setattr__(self, "tissue", self.tissue._replace(**maps))
        object.__setattr__(self, "spacing", spacing_pair(self.spacing))

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(np.shape(self.regions))

    @property
    def law(self) -> str:
        """The name of the tissue's law (:func:`helmholtz_pinn.laws.of`)."""
        return laws.of(self.tissue).name

    def modulus(self, frequency: float, refine=None) -> np.ndarray:
        """Complex modulus ``mu`` in Pa at ``frequency`` Hz, shape ``(nx, ny)``: the
        tissue's law (:func:`helmholtz_pinn.laws.modulus`); ``refine`` maps each parameter
        map (and the result's grid) onto another grid first (the solver's)."""
        refine = refine or (lambda a: a)
        maps = {k: refine(v) for k, v in _maps(self.tissue).items()}
        mu = laws.modulus(self.tissue._replace(**maps), frequency)
        shape = np.shape(refine(self.regions))
        return mu if np.shape(mu) == shape else np.full(shape, mu)


def _maps(tissue: tuple) -> dict[str, np.ndarray]:
    """The fields of ``tissue`` that are maps (the others are numbers)."""
    return {k: v for k, v in zip(tissue._fields, tissue, strict=True) if np.ndim(v)}


def as_springpot(phantom: Phantom, alpha, reference_frequency: float = 50.0) -> Phantom:
    """``phantom`` made of power-law tissue (:mod:`helmholtz_pinn.laws.springpot`) with
    its ``G'`` at ``reference_frequency`` Hz and exponent ``alpha`` (a number or a map in
    (0, 1))."""
    f0 = float(reference_frequency)
    alpha = np.broadcast_to(np.asarray(alpha, float), phantom.shape).copy()
    storage = phantom.modulus(f0).real
    return dataclasses.replace(phantom, tissue=springpot.from_storage(storage, alpha, f0))


def _centres(
    shape: tuple[int, int], spacing: float | Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Voxel-centre coordinates ``x = (i + 1/2) hx``, ``y = (j + 1/2) hy`` in m, ``ij`` layout."""
    hx, hy = spacing_pair(spacing)
    return np.meshgrid(
        (np.arange(shape[0]) + 0.5) * hx, (np.arange(shape[1]) + 0.5) * hy, indexing="ij"
    )


def _phantom(name, storage, regions, spacing, viscosity, rho) -> Phantom:
    """A phantom of Voigt tissue: ``storage`` G' Pa (a map), ``viscosity`` eta Pa s."""
    tissue = voigt.Voigt(storage.astype(float), viscosity)
    return Phantom(name, tissue, regions.astype(np.int32), spacing, rho)


def _inclusions(name, shape, spacing, background, stiff, masks, viscosity, rho) -> Phantom:
    """``stiff`` Pa inclusions in a ``background`` Pa matrix; regions 2, 3, .. are the
    boolean ``masks`` in order (a later mask overwrites an earlier one)."""
    regions = np.ones(shape, int)
    for label, inside in enumerate(masks, start=2):
        regions[inside] = label
    storage = np.where(regions > 1, stiff, background)
    return _phantom(name, storage, regions, spacing, viscosity, rho)


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
    radii=FOUR_TARGET_RADII,
    centres=FOUR_TARGET_CENTRES,
    viscosity=1.0,
    rho=1000.0,
) -> Phantom:
    """BIOQIC-like box: disks of ``target`` Pa (radii in m; centres as fractions of the
    field of view) in a ``background`` Pa matrix. Regions 2, 3, .. follow ``radii``."""
    x, y = _centres(shape, spacing)
    (hx, hy), (nx, ny) = spacing_pair(spacing), shape
    lx, ly = nx * hx, ny * hy
    disks = [(cx * lx, cy * ly, r) for (cx, cy), r in zip(centres, radii, strict=True)]
    for i, (cx, cy, r) in enumerate(disks):
        if min(cx, cy, lx - cx, ly - cy) < r + 2 * max(hx, hy):
            raise InputError(
                f"four-target: disk {i} (radius {r} m) does not fit {lx}x{ly} m with a margin"
            )
        for cx2, cy2, r2 in disks[:i]:
            if math.hypot(cx - cx2, cy - cy2) < r + r2 + max(hx, hy):
                raise InputError(f"four-target: disk {i} (radius {r} m) overlaps another disk")
    masks = [(x - cx) ** 2 + (y - cy) ** 2 <= r**2 for cx, cy, r in disks]
    return _inclusions("four-target", shape, spacing, background, target, masks, viscosity, rho)


def smooth(
    shape=(80, 100), spacing=1e-3, background=3e3, gradient=600.0, viscosity=1.0, rho=1000.0
) -> Phantom:
    """Smooth heterogeneous layout, about 2-8 kPa: ``background`` plus a linear ramp of
    ``gradient`` Pa across x and Gaussian bumps (two stiff, one soft). Regions: 2 where
    ``G' > background + 1.5 kPa`` (stiff), 3 where ``G' < background - 0.5 kPa`` (soft)."""
    x, y = _centres(shape, spacing)
    lx, ly = shape[0] * spacing_pair(spacing)[0], shape[1] * spacing_pair(spacing)[1]
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
    ly = shape[1] * spacing_pair(spacing)[1]
    start = 0.5 * (ly - sum(widths) - gap * (len(widths) - 1))
    if start < gap:
        raise InputError(f"stripes: widths {widths} with gap {gap} m do not fit {ly} m")
    masks = []
    for w in widths:
        masks.append((y >= start) & (y < start + w))
        start += w + gap
    return _inclusions("stripes", shape, spacing, background, stiff, masks, viscosity, rho)


PHANTOMS: dict[str, Callable[..., Phantom]] = {
    "homogeneous": homogeneous,
    "four-target": four_target,
    "smooth": smooth,
    "stripes": stripes,
}


def make_phantom(name: str, **overrides) -> Phantom:
    """Build a registered phantom's tissue layout.

    Args:
      name: a key of :data:`PHANTOMS`.
      **overrides: keyword arguments of its factory that replace the defaults (e.g.
        ``shape``, ``spacing``).

    Returns:
      The :class:`Phantom` (moduli in Pa on the data voxel grid).

    Raises:
      InputError: unknown ``name``.
    """
    if name not in PHANTOMS:
        raise InputError(f"unknown phantom {name!r}; valid names: {', '.join(PHANTOMS)}")
    return PHANTOMS[name](**overrides)


# --------------------------------------------------------------------------- simulation


def _sponge_voxels(phantom: Phantom, frequencies: Sequence[float], wavelengths: float = 1.0) -> int:
    """Sponge width in data voxels: ``wavelengths`` times the longest shear wavelength
    ``sqrt(G'/rho) / f`` on the field-of-view edge (largest ``G' = Re mu`` at the lowest
    ``f``)."""
    g = phantom.modulus(min(frequencies)).real
    edge = max(g[0].max(), g[-1].max(), g[:, 0].max(), g[:, -1].max())
    wavelength = math.sqrt(edge / phantom.rho) / min(frequencies)
    return max(2, math.ceil(wavelengths * wavelength / min(phantom.spacing)))


def simulate(
    phantom: Phantom,
    frequencies: Sequence[float] = DEFAULT_FREQUENCIES,
    components: int = DEFAULT_COMPONENTS,
    *,
    nz: int | None = None,
    through_plane: float = 0.3,
    oversample: int = 2,
    sponge_wavelengths: float = 1.0,
    sponge_strength: float = 6.0,
) -> Dataset:
    """Simulate a 2-D MRE acquisition of ``phantom`` at ``frequencies`` (Hz), or with
    ``nz`` a 3-D one: the layout extruded over ``nz`` slices (z spacing = x spacing).

    Each field solves ``div(mu grad u) + rho omega^2 u = f`` with ``mu`` (Pa) the
    phantom's tissue law at ``f`` (:meth:`Phantom.modulus`) on the phantom padded (edge
    values repeated) by an absorbing layer of ``sponge_wavelengths`` times the longest
    wavelength, then ``u = 0``. The layer is a
    perfectly matched layer (:func:`~helmholtz_pinn.forward.scalar_fd.solve_pml`, stretch
    ``1 - i alpha`` with ``alpha`` rising quadratically to ``sponge_strength``), which
    absorbs outgoing waves without damping waves that run along it (measured
    reflection ~1e-4 of the amplitude at the defaults). The grid is refined
    ``oversample`` times (less numerical dispersion) and the field sampled back at the
    data voxel centres. Component ``c`` is one solve, driven by a line source one data
    voxel outside the field of view along edge ``DRIVE_EDGES[c]`` (top = low x, left =
    low y, bottom, right) that launches plane waves of about unit amplitude.

    Volumes: in a z-invariant medium ``u(x, y, z) = v(x, y) exp(-i kz z)`` solves the 3-D
    equation exactly when ``div(mu grad v) + (rho omega^2 - kz^2 mu) v = f`` in the plane
    (solved as above), so each field travels through-plane too, with ``kz =
    through_plane * omega sqrt(rho / max G')`` rad/m (``G' = Re mu`` at that frequency;
    real; < the shear wavenumber everywhere, so no region turns evanescent): at the
    default 0.3 the wave vector tilts asin(0.3 sqrt(G'/max G')) out of the slice plane
    (9.5 deg in the four-target background), which a slice-by-slice 2-D inversion reads
    as ``mu / (1 - kz^2/k^2)``.

    Returns:
      :class:`Dataset` with ``u`` complex64 ``(F, C, *grid)`` (grid ``(nx, ny)`` or
      ``(nx, ny, nz)``), the true ``mu`` complex128 ``(F, *grid)`` in Pa, ``regions``,
      ``rho``, all-true ``mask``.
    """
    freqs = _check_simulate_args(frequencies, components, nz, through_plane, oversample)
    s, nx, ny = int(oversample), *phantom.shape
    n_pad = _sponge_voxels(phantom, freqs, sponge_wavelengths)

    pad = n_pad + 1  # absorbing layer, then one undamped voxel holding the drive

    def refine(a: np.ndarray) -> np.ndarray:
        return np.pad(a, pad, mode="edge").repeat(s, 0).repeat(s, 1)

    h = (phantom.spacing[0] / s, phantom.spacing[1] / s)
    fov = (slice(None), slice(pad * s, (pad + nx) * s), slice(pad * s, (pad + ny) * s))
    row = n_pad * s  # drive in the undamped voxel just outside the field of view
    u = np.empty((freqs.size, components, nx, ny), np.complex64)
    kz, rho = np.zeros(freqs.size), float(phantom.rho)  # through-plane wavenumber, rad/m
    for i, f in enumerate(freqs):
        omega = 2 * np.pi * f
        mu = phantom.modulus(f, refine)
        kz[i] = 0.0 if nz is None else through_plane * omega * math.sqrt(rho / mu.real.max())
        rho_plane = rho - kz[i] ** 2 * mu / omega**2  # kg/m^3: the in-plane problem's
        k = omega * np.sqrt(rho_plane / mu)  # in-plane wavenumber, rad/m
        force = np.stack([line_source(mu, k, h, e, row) for e in DRIVE_EDGES[:components]])
        field = solve_pml(mu, rho_plane, omega, h, force, n_pad * s, sponge_strength)
        u[i] = sample_centres(field[fov], s)
    true_mu = np.stack([phantom.modulus(f) for f in freqs]).astype(np.complex128)
    grids = (u, true_mu, phantom.regions, np.ones(phantom.shape, bool))
    spacing = np.asarray(phantom.spacing, dtype=float)
    if nz is not None:
        grids, spacing = _extrude(grids, spacing, kz, nz)
    u, true_mu, regions, mask = grids
    return Dataset(
        u=u,
        frequency=freqs,
        spacing=spacing,
        mask=mask,
        mu=true_mu,
        regions=np.asarray(regions),
        rho=rho,
    )


def _check_simulate_args(frequencies, components, nz, through_plane, oversample) -> np.ndarray:
    """The frequencies (Hz) as an array, once every argument of :func:`simulate` is valid."""
    freqs = np.asarray(frequencies, dtype=float).reshape(-1)
    if freqs.size == 0 or not np.all(freqs > 0):
        raise InputError(f"frequencies must be positive (Hz); got {frequencies!r}")
    if not 1 <= components <= len(DRIVE_EDGES):
        raise InputError(
            f"components must be 1..{len(DRIVE_EDGES)} (one per edge of {DRIVE_EDGES}); "
            f"got {components}"
        )
    if nz is not None and not (isinstance(nz, int) and nz >= 1):
        raise InputError(f"nz must be a positive integer (slices); got {nz!r}")
    if not 0 <= through_plane < 1:
        raise InputError(f"through_plane must be in [0, 1); got {through_plane!r}")
    if int(oversample) != oversample or oversample < 1:
        raise InputError(f"oversample must be a positive integer; got {oversample!r}")
    return freqs


def _extrude(grids: tuple, spacing: np.ndarray, kz: np.ndarray, nz: int):
    """(u, mu, regions, mask) of a slice extruded over ``nz`` slices (z spacing = x
    spacing); u runs along z as exp(-i kz z) (``kz`` rad/m per frequency)."""
    z = (np.arange(nz) + 0.5) * spacing[0]
    phase = np.exp(-1j * kz[:, None, None, None, None] * z).astype(np.complex64)
    u = grids[0][..., None] * phase
    return (u, *(np.repeat(a[..., None], nz, -1) for a in grids[1:])), np.append(
        spacing, spacing[0]
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
        raise InputError(f"u must be complex; got {u.dtype} {u.shape}")
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
    nz: int | None = None,
    **overrides,
) -> Dataset:
    """Simulate a built-in phantom's MRE acquisition, with noise if asked.

    The equation, the absorbing layer and the drives are those of
    :func:`helmholtz_pinn.forward.phantoms.simulate`.

    Args:
      name: a key of :data:`PHANTOMS`.
      noise_db: noise-to-signal power ratio in dB (:func:`add_noise`); None: clean.
      seed: the noise's random seed.
      frequencies: drive frequencies, Hz; None: 60, 80, 100.
      components: displacement components (one solve each); None: 2.
      nz: slices of a 3-D volume (the layout extruded along z); None: a 2-D slice.
      **overrides: keyword arguments of the phantom's factory (:func:`make_phantom`).

    Returns:
      A :class:`~helmholtz_pinn.io.dataset.Dataset` with ``u`` ``(F, C, *grid)`` and
      its ground truth ``mu`` (Pa) and ``regions``.
    """
    phantom = make_phantom(name, **overrides)
    data = simulate(
        phantom,
        DEFAULT_FREQUENCIES if frequencies is None else frequencies,
        DEFAULT_COMPONENTS if components is None else components,
        nz=nz,
    )
    if noise_db is None:
        return data
    return dataclasses.replace(data, u=add_noise(data.u, noise_db, seed))
