"""Memory: what a fit needs and what the devices and the host have free: the bytes a
problem stores per voxel, what one member of a stacked fit needs, how many members fit at
once.

A problem holds per voxel its coordinates x (float32, d values) and the data u
(complex64, F C values): ``4 d + 8 F C`` bytes (3-D, F = C = 3: 84 bytes, so 256^3
voxels take 1.4 GB). Only the problem scales with the voxel count; a step touches the
batch only. The refusals live with what they guard: a placement whose problem does not
fit a device (:func:`helmholtz_pinn.fit.placement.check_device_memory`), results that do
not fit the host (:func:`helmholtz_pinn.fit.admission.check_results_fit`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # JAX is imported where a device is asked: baseline checks go without it
    import jax

    from helmholtz_pinn.pinn import train

MEMORY_FRACTION = 0.9  # share of a device's free memory the problem's arrays may take


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

    per_voxel = bytes_per_voxel(spec.ndim, spec.n_freq, spec.n_comp)
    hidden = spec.width * spec.depth + spec.mu_width * spec.mu_depth
    jet = jet_rows(spec.ndim, max(spec.u_order, spec.mu_order))
    points = min(spec.batch_size, rows) * spec.patch_size
    state = jax.eval_shape(lambda: train.init_state(spec, 0, 1.0, 1.0, 1.0))
    state_bytes = sum(a.size * a.dtype.itemsize for a in jax.tree.leaves(state))
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
