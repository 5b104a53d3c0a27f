"""Memory: what a fit needs, what a device has free, how many members fit, and whether
the result arrays fit the host.

A problem holds per voxel its coordinates x (float32, d values) and the data u
(complex64, F C values): ``4 d + 8 F C`` bytes (3-D, F = C = 3: 84 bytes, so 256^3
voxels take 1.4 GB). Only the problem scales with the voxel count; a step touches the
batch only. The result arrays (:func:`result_bytes`) cover every voxel of the grid, the
mask's or not, and are held on the host.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DeviceMemoryError

if TYPE_CHECKING:  # JAX is imported where a device is asked: baseline checks go without it
    import jax

    from helmholtz_pinn.pinn import train

MEMORY_FRACTION = 0.9  # share of a device's free memory the problem's arrays may take
HOST_FRACTION = 0.8  # share of the host's available memory the results may take


def bytes_per_voxel(ndim: int, n_freq: int, n_comp: int) -> int:
    """Device bytes a Problem stores per voxel: x (float32, ndim) + u (complex64, F C)."""
    return 4 * ndim + 8 * n_freq * n_comp


def free_device_memory(device: jax.Device | None = None) -> int | None:
    """Free bytes on ``device`` (default the first) from ``memory_stats()``; None where
    the backend does not report it (the CPU)."""
    import jax

    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - some backends raise instead of returning None
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def check_device_memory(
    rows: int, per_voxel: int, *, device: jax.Device | None = None, free_bytes: int | None = None
) -> int:
    """Refuse (:class:`DeviceMemoryError`) ``rows`` voxel rows of ``per_voxel`` bytes on one
    device above ``MEMORY_FRACTION`` of its free memory (``free_bytes``, else measured;
    no check where the backend reports none). Returns the bytes needed."""
    import jax

    need = int(rows) * int(per_voxel)
    free = free_device_memory(device) if free_bytes is None else int(free_bytes)
    if free is not None and need > MEMORY_FRACTION * free:
        raise DeviceMemoryError(
            f"the problem needs {need / 2**30:.2f} GiB on {device or jax.devices()[0]} for "
            f"{rows:,} voxel rows ({per_voxel} bytes each), but the device has "
            f"{free / 2**30:.2f} GiB free (at most {MEMORY_FRACTION:.0%} may be used); spread "
            "it over more devices (devices='all' shards the voxels or members), fit fewer "
            "members at once, or crop the mask"
        )
    return need


def member_bytes(spec: train.Spec, rows: int) -> int:
    """Device bytes one member of a stacked fit needs (an estimate): its problem, ``rows``
    x :func:`bytes_per_voxel`; its state four times (parameters, Adam's two moments, the
    gradient); and one step's activations, B = min(batch, rows) x Q points (Q the
    points of a patch for a form with a stencil, ``Spec.patch_size``, else 1) x (width x
    depth + mu_width x mu_depth) hidden values x J jet rows (value and derivatives up to
    the form's order, :func:`helmholtz_pinn.pinn.model.jet_rows`) x 4 bytes x 3 (forward,
    kept for the backward pass, its gradient)."""
    import jax

    from helmholtz_pinn.pinn import train
    from helmholtz_pinn.pinn.model import jet_rows

    state = jax.eval_shape(lambda: train.init_state(spec, 0, 1.0, 1.0, 1.0))
    state_bytes = sum(a.size * a.dtype.itemsize for a in jax.tree.leaves(state))
    hidden = spec.width * spec.depth + spec.mu_width * spec.mu_depth
    jet = jet_rows(spec.ndim, max(spec.u_order, spec.mu_order))
    points = min(spec.batch_size, rows) * spec.patch_size
    per_voxel = bytes_per_voxel(spec.ndim, spec.n_freq, spec.n_comp)
    return rows * per_voxel + 4 * state_bytes + points * hidden * jet * 4 * 3


def members_per_chunk(spec: train.Spec, rows: int, n_devices: int = 1) -> int | None:
    """How many members fit at once: ``MEMORY_FRACTION`` of the first device's free
    memory over :func:`member_bytes`, times the device count; on a backend that reports
    no device memory (the CPU) the host's available memory, shared by all its devices.
    None when neither is known; at least 1."""
    free, share = free_device_memory(), n_devices
    if free is None:
        free, share = available_host_memory(), 1
    if free is None:
        return None
    return max(1, int(MEMORY_FRACTION * free // member_bytes(spec, rows)) * share)


def available_host_memory() -> int | None:
    """The host's available memory in bytes (``SC_AVPHYS_PAGES`` x ``SC_PAGE_SIZE``);
    None where the system does not say (no ``os.sysconf``, or not these names)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def result_bytes(
    grid: tuple[int, ...],
    n_freq: int,
    n_comp: int,
    *,
    ensemble: int = 1,
    datasets: int = 1,
    slicewise: bool = False,
    u_itemsize: int = 16,
    fits: int = 1,
) -> int:
    """Host bytes of the result arrays of a fit held together when the last Result is
    built (:func:`helmholtz_pinn.fit.inversion.invert`). V = prod(``grid``) voxels of one
    dataset's full grid (a slicewise fit: of the volume), F frequencies, C components, E
    = ``ensemble`` members per dataset, S = ``datasets`` (a batch), b = ``u_itemsize``
    (bytes per value of the input u: 8 complex64, 16 complex128)::

        bytes = fits x S x V x (
              E F (8 + 16 C)     each member's maps until every Result is built
                                 (fit.chunks._maps: mu complex64, u_fit complex128)
            + 16 F C             the fitted field u_fit (F, C, *grid), complex128
            + 2 F C b            u / s (io.dataset.unit_amplitude) and the Result's u in
                                 the data's unit (copies only where s != 1)
            + m)                 the map mu (report.result.member_stats)

    with m = 8 F for one fit (complex64) and 32 F for an ensemble (its mean and its
    spread mu_std, complex128); slicewise, the members' maps are first stacked on the
    volume as complex128 (E, F, *grid): m = 16 F for E = 1 (the stack is the map) and
    16 E F + 32 F for an ensemble. ``fits``: 2 for ``mu_model="auto"`` at two or more
    frequencies (both laws' Results are held until one is chosen). Not counted: the
    input itself, the training state and problem (:func:`member_bytes`), and what
    building one Result needs for a moment (:func:`building_bytes`).
    """
    f, c, e = int(n_freq), int(n_comp), int(ensemble)
    if e == 1:
        mu = 16 * f if slicewise else 8 * f
    else:
        mu = 32 * f + (16 * e * f if slicewise else 0)
    per_voxel = e * f * (8 + 16 * c) + 16 * f * c + 2 * f * c * int(u_itemsize) + mu
    return int(fits) * int(datasets) * math.prod(grid) * per_voxel


def building_bytes(grid: tuple[int, ...], n_freq: int, n_comp: int, ensemble: int = 1) -> int:
    """Host bytes that building and saving one Result on ``grid`` needs for a moment,
    besides the result arrays (:func:`result_bytes`): V x max(128 F C, 40 E F for an
    ensemble of E > 1). The first is the wave misfit summary's temporaries
    (report.result.misfit_summary: about eight complex128 copies of u), the second an
    ensemble's mean and spread (report.result.member_stats); both measured with
    tracemalloc (docs/reliability.md, "Results and the host's memory").

    With :func:`result_bytes`, e.g. 256^3 voxels, F = C = 3, E = 5, complex64 u: 1224
    + 1152 bytes per voxel, 39.9 GB."""
    f, c, e = int(n_freq), int(n_comp), int(ensemble)
    return math.prod(grid) * max(128 * f * c, 40 * e * f if e > 1 else 0)


def check_host_memory(
    need: int, what: str, *, available: int | None = None, baseline: bool = False
) -> int:
    """Refuse (:class:`DeviceMemoryError`) result arrays of ``need`` bytes (of ``what``,
    e.g. "grid 2000 x 2000, 3 frequencies, 2 components") above ``HOST_FRACTION`` of the
    host's ``available`` memory in bytes (default :func:`available_host_memory`; no check
    where that is unknown): the rest is left to the Python and JAX runtime. ``baseline``:
    the message speaks of a baseline, not of a fit. Returns ``need``."""
    available = available_host_memory() if available is None else int(available)
    if available is not None and need > HOST_FRACTION * available:
        whose = "a baseline on " if baseline else "the results of this fit ("
        scope = "" if baseline else ": maps on every voxel of the grid)"
        fewer = "use fewer frequencies" if baseline else (
            "fit fewer frequencies (or a smaller ensemble or batch), fit a volume in slabs of "
            "z-slices in separate runs"
        )  # fmt: skip
        raise DeviceMemoryError(
            f"{whose}{what}{scope} need{'s' if baseline else ''} {_size(need)} of host "
            f"memory, but the host has {_size(available)} available (at most "
            f"{HOST_FRACTION:.0%} may be used); crop the data to the mask's bounding box, "
            f"{fewer}, or use a machine with more memory"
        )
    return need


def check_results_fit(
    data, cfg: Config, slicewise: bool = False, *, available: int | None = None
) -> int | None:
    """:func:`check_host_memory` of :func:`result_bytes` and :func:`building_bytes` for
    ``invert(data, cfg, slicewise=...)``: ``data`` one Dataset or a list or tuple of them
    (the first one's grid, F, C and u's dtype; other input is left to invert's own
    checks). Returns the bytes needed, or None when not checked."""
    many = isinstance(data, (list, tuple))
    first = data[0] if many and data else data
    if not hasattr(first, "grid"):
        return None
    e, s = cfg.ensemble, len(data) if many else 1
    need = result_bytes(
        first.grid,
        first.n_freq,
        first.n_comp,
        ensemble=e,
        datasets=s,
        slicewise=slicewise,
        u_itemsize=first.u.dtype.itemsize,
        fits=2 if cfg.mu_model == "auto" and first.n_freq > 1 else 1,
    ) + building_bytes(first.grid, first.n_freq, first.n_comp, e)
    what = [f"grid {' x '.join(map(str, first.grid))}", f"{first.n_freq} frequencies"]
    what.append(f"{first.n_comp} components")
    what += ([f"an ensemble of {e}"] if e > 1 else []) + ([f"{s} datasets"] if s > 1 else [])
    return check_host_memory(need, ", ".join(what), available=available)


def check_baseline_fits(dataset, *, available: int | None = None) -> int:
    """:func:`check_host_memory` of what ``helmholtz-pinn baseline`` on ``dataset`` needs
    (:func:`helmholtz_pinn.assess.baselines.baseline_bytes`); returns the bytes."""
    from helmholtz_pinn.assess.baselines import baseline_bytes

    grid, f, c = dataset.grid, dataset.n_freq, dataset.n_comp
    need = baseline_bytes(grid, f, c)
    what = f"grid {' x '.join(map(str, grid))}, {f} frequencies, {c} components"
    return check_host_memory(need, what, available=available, baseline=True)


def _size(n: int) -> str:
    """``n`` bytes in GiB, MiB below one GiB, KiB below one MiB."""
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"
