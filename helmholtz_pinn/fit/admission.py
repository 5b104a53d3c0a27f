"""The door of a fit: the input checked against MRE physics, and its results against the
host's memory, before any training.

:func:`admitted` is the door of :func:`helmholtz_pinn.fit.inversion.invert`: the input
scaled to unit amplitude, each dataset admitted (:func:`admit`), a batch held to one
grid, F and C (:func:`check_batch`), a volume cut into its z-slices for a slicewise fit.
:func:`admit` runs :func:`helmholtz_pinn.assess.input_checks.check` (frequency in Hz,
spacing in m, a resolved shear wave, no empty component) and records the facts a run
keeps (the AHI estimate, Pa; dropped components; the problems found under ``force``).
:func:`check_results_fit` refuses, first of all, a fit whose result arrays
(:func:`result_bytes`, :func:`building_bytes`) would not fit the host's memory.
"""

from __future__ import annotations

import dataclasses
import math
import time

from helmholtz_pinn.assess import input_checks, metrics
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DeviceMemoryError, InputError
from helmholtz_pinn.fit import memory
from helmholtz_pinn.io.dataset import Dataset, unit_amplitude, z_slices

HOST_FRACTION = 0.8  # share of the host's available memory the results may take


@dataclasses.dataclass
class Admitted:
    """The input of a run, admitted (:func:`admitted`): ``data`` (u divided by
    ``scales``), ``datasets`` the members (the z-slices of a slicewise fit, ``keep``
    their indices), ``checks`` the input facts per dataset, ``slicewise`` how they are
    fitted and ``seconds`` the time the door took (s)."""

    data: Dataset | list[Dataset]
    datasets: list[Dataset]
    keep: list[int] | None
    scales: list[float]
    checks: list[dict]
    slicewise: bool
    seconds: float

    @property
    def stacked(self) -> bool:
        """Whether the members have a leading axis (a batch, a slicewise fit)."""
        return len(self.datasets) > 1 or self.slicewise

    @property
    def estimates(self) -> list[float | None] | None:
        """The datasets' AHI estimates (Pa); None for the slices of a volume."""
        return None if self.slicewise else [c["ahi_estimate_pa"] for c in self.checks]


def admitted(data, *, slicewise: bool, force: bool, drop: bool, metric_margin: int) -> Admitted:
    """``data`` (one Dataset or a list of them) scaled to unit amplitude
    (:func:`helmholtz_pinn.io.dataset.unit_amplitude`: u / s, scale-free numerics),
    admitted (:func:`admit`; ``force``, ``drop``) and, for a ``slicewise`` fit, cut into
    its z-slices. A ``metric_margin`` (voxels) that leaves no voxel of a mask is refused
    here, before any fit (in-plane only for a slicewise fit)."""
    t0 = time.perf_counter()
    one = isinstance(data, Dataset)
    if slicewise and not one:
        raise InputError("slicewise=True takes one 3-D Dataset, not a list")
    scaled = [unit_amplitude(d) for d in ([data] if one else check_batch(data))]
    scales = [s for _, s in scaled]  # u / s: scale-free numerics; u_fit * s at the end
    admitted = [admit(d, force, drop, None if one else i) for i, (d, _) in enumerate(scaled)]
    checks = [facts for _, facts in admitted]
    data = admitted[0][0] if one else check_batch([d for d, _ in admitted])
    for d in [data] if one else data:  # a metric margin that leaves nothing: refused now
        metrics.interior_mask(d.mask, metric_margin, (0, 1) if slicewise else None)
    datasets, keep = z_slices(data) if slicewise else ([data] if one else data, None)
    seconds = time.perf_counter() - t0
    return Admitted(data, datasets, keep, scales, checks, slicewise, seconds)


def admit(dataset: Dataset, force: bool, drop: bool, index: int | None) -> tuple[Dataset, dict]:
    """The plausibility check at the door: (dataset, its run facts) with the empty
    components dropped when ``drop``; raises InputError unless ``force``, naming
    ``datasets[index]`` in a batch."""
    try:
        return _checked(dataset, force, drop)
    except InputError as err:
        if index is None:
            raise
        raise type(err)(f"datasets[{index}]: {err}") from None


def _checked(dataset: Dataset, force: bool, drop: bool) -> tuple[Dataset, dict]:
    facts = {}
    if drop:
        dataset, dropped = input_checks.drop_empty_components(dataset)
        facts["dropped_components"] = dropped
    facts["ahi_estimate_pa"] = input_checks.estimate(dataset)  # once: check, mu_ref, quality
    notes = input_checks.check(dataset, force=force, modulus=facts["ahi_estimate_pa"])
    if notes:
        facts["input_notes"] = notes
    return dataset, facts


def check_batch(datasets) -> list[Dataset]:
    datasets = list(datasets)
    if not datasets:
        raise InputError("invert needs a Dataset or a non-empty list of Dataset; got an empty list")
    first = datasets[0]
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise InputError(f"datasets[{i}] must be a Dataset; got {type(d).__name__}")
        if (d.grid, d.n_freq, d.n_comp) != (first.grid, first.n_freq, first.n_comp):
            raise InputError(
                "a batch of datasets must share one grid, F and C (one compiled program); "
                f"datasets[0] has grid {first.grid}, F={first.n_freq}, C={first.n_comp} but "
                f"datasets[{i}] has grid {d.grid}, F={d.n_freq}, C={d.n_comp}; invert them "
                "in separate calls"
            )
    return datasets


# --- the results and the host's memory ------------------------------------------


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
    frequencies (where both laws are fitted, both are held until one is chosen). Not counted: the
    input itself, the training state and problem
    (:func:`helmholtz_pinn.fit.memory.member_bytes`), and what building one Result needs
    for a moment (:func:`building_bytes`).
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
    host's ``available`` memory in bytes (default
    :func:`helmholtz_pinn.fit.memory.available_host_memory`; no check where that is
    unknown): the rest is left to the Python and JAX runtime. ``baseline``: the message
    speaks of a baseline, not of a fit. Returns ``need``."""
    available = memory.available_host_memory() if available is None else int(available)
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
