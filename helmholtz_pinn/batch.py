"""Many fits in one program: S datasets of one grid, or the z-slices of a volume.

S PINNs with stacked parameters run through one vmapped scan block
(``train.fit(..., batched="stacked")``); each member keeps its own data scaling (kappa,
omega ratio and u scale live in its Problem row), loss, learning-rate schedule,
roll-back and early stop. The compiled block is shared, so its static Spec must be:
every member uses one reference modulus mu_ref (the configured one, else the median of
the per-dataset estimates) and one pair of Fourier scales (the configured ones, else
derived from the shortest wavelength over all datasets). Masked voxels are padded to a
common row count M; ``Problem.count`` holds each member's valid rows, and padding is
never sampled. With the same mu_ref and seed, member i computes what
``invert(datasets[i])`` computes (float rounding of the batched matmuls aside), with one
exception: when ``batch_size`` lies between a member's voxel count and the largest one,
that member draws ``batch_size`` random voxels per step (its own fit would use all its
voxels every step), because full-batch mode is decided on the padded row count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import jax
import numpy as np

from helmholtz_pinn import inversion, sharding, train
from helmholtz_pinn.config import Config
from helmholtz_pinn.data import Dataset
from helmholtz_pinn.inversion import Prepared, Result


def shared_scales(datasets: Sequence[Dataset], cfg: Config) -> Config:
    """``cfg`` with mu_ref (Pa) and sigma_u/sigma_mu filled in, one value for all datasets.

    mu_ref: ``cfg.mu_ref``, else the median of the per-dataset estimates. sigma: the
    configured value, else ``sigma_factor * max_i L_i / lambda_min,i`` (cycles per field
    of view; the largest, so every dataset's shortest wave is representable).
    """
    if cfg.mu_ref is not None:
        mu_ref = float(cfg.mu_ref)
    else:
        mu_ref = float(np.median([inversion.reference_modulus(d, cfg) for d in datasets]))
    cycles = max(inversion.wave_cycles(d, mu_ref) for d in datasets)
    return cfg.replace(
        mu_ref=mu_ref,
        sigma_u=cfg.sigma_u or cfg.sigma_factor_u * cycles,
        sigma_mu=cfg.sigma_mu or cfg.sigma_factor_mu * cycles,
    )


def pad_problem(problem: train.Problem, rows: int) -> train.Problem:
    """A host Problem with x and u zero-padded to ``rows`` rows (``count`` unchanged)."""

    def pad(a):
        a = np.asarray(a)
        return np.concatenate([a, np.zeros((rows - len(a),) + a.shape[1:], a.dtype)])

    return problem._replace(x=pad(problem.x), u=pad(problem.u))


def stack_members(preps: Sequence[Prepared], cfg: Config) -> tuple[train.TrainState, train.Problem]:
    """Host state and problem of S E members (dataset-major, E = ``cfg.ensemble`` seeds
    ``cfg.seed + e`` each): problems padded to the largest row count and stacked."""
    rows = max(int(p.problem.count) for p in preps)
    ens = cfg.ensemble
    problems = [pad_problem(p.problem, rows) for p in preps for _ in range(ens)]
    problem = jax.tree.map(lambda *a: np.stack(a), *problems)
    seeds = [jax.device_get(train.init_state(preps[0].spec, cfg.seed + e)) for e in range(ens)]
    state = jax.tree.map(lambda *a: np.stack(a), *(seeds * len(preps)))
    return state, problem


def _check_compatible(datasets: Sequence[Dataset]) -> None:
    if isinstance(datasets, Dataset) or not datasets:
        raise TypeError(
            "invert_many needs a non-empty list of Dataset; got "
            f"{type(datasets).__name__}{'' if datasets else ' (empty)'}"
        )
    first = datasets[0]
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise TypeError(f"datasets[{i}] must be a Dataset; got {type(d).__name__}")
        if (d.grid, d.n_freq, d.n_comp) != (first.grid, first.n_freq, first.n_comp):
            raise ValueError(
                "invert_many needs datasets of one grid, F and C (one compiled program); "
                f"datasets[0] has grid {first.grid}, F={first.n_freq}, C={first.n_comp} but "
                f"datasets[{i}] has grid {d.grid}, F={d.n_freq}, C={d.n_comp}; invert them "
                "in separate calls"
            )


def _member(state: train.TrainState, i: int, ensemble: int):
    """(rows, state) of dataset i's member(s) in a stacked state (E = ``ensemble`` each)."""
    rows = i if ensemble == 1 else slice(i * ensemble, (i + 1) * ensemble)
    return rows, jax.tree.map(lambda a: a[rows], state)


def _fit_many(
    datasets: Sequence[Dataset], cfg: Config, devices, progress: bool, callback
) -> tuple[list[Prepared], train.TrainState, list[dict], int, float]:
    """Prepare, stack, pad and fit; returns (preps, host state (S E members), history,
    devices used, start time)."""
    t0 = time.perf_counter()
    _check_compatible(datasets)
    shared = shared_scales(datasets, cfg)
    preps = [inversion.prepare(d, shared, on_device=False) for d in datasets]
    spec = preps[0].spec
    if any(p.spec != spec for p in preps):  # cannot happen for compatible datasets
        raise RuntimeError("datasets gave different static specs")
    state, problem = stack_members(preps, cfg)
    rows, members = problem.x.shape[1], problem.x.shape[0]
    chosen = sharding.resolve_devices(devices, members=members)
    kwargs = dict(batched="stacked", progress=progress, callback=callback)
    if len(chosen) == 1:
        sharding.check_device_memory(
            rows, spec.ndim, spec.n_freq, spec.n_comp, members=members, device=chosen[0]
        )
        state, history = train.fit(
            jax.device_put(state, chosen[0]), jax.device_put(problem, chosen[0]), spec, **kwargs
        )
        state = jax.device_get(state)
    else:
        per_device = -(-members // len(chosen))
        sharding.check_device_memory(
            rows, spec.ndim, spec.n_freq, spec.n_comp, members=per_device, device=chosen[0]
        )
        kwargs.pop("batched")
        state, history = sharding.fit_members(
            state, problem, spec, sharding.make_mesh(chosen), **kwargs
        )
    return preps, state, history, len(chosen), t0


def invert_many(
    datasets: Sequence[Dataset],
    config: Config | None = None,
    *,
    devices: int | str | None = None,
    progress: bool = True,
    callback: Callable[[dict], bool | None] | None = None,
    **overrides,
) -> list[Result]:
    """Fit S datasets of one grid, F and C as one batched program; one Result each.

    ``overrides`` replace fields of ``config``. Member i starts from the seed
    ``config.seed`` (the same initial networks as ``invert(datasets[i], config)``) and
    has its own data scaling, loss, plateau schedule, roll-back and early stop; mu_ref
    and the Fourier scales are shared (see :func:`shared_scales`; ``metrics["mu_ref_pa"]``).
    With ``ensemble`` E each dataset gets E members (mean and spread as in ``invert``).
    ``devices``: an int N or None/"all" (every device when S E >= the device count, see
    :func:`helmholtz_pinn.sharding.resolve_devices`); members are split across devices.
    ``callback`` sees the batched records (one value per member). Each Result's
    ``wall_time_s`` is the time of the whole batch. No checkpoints.
    Raises TypeError/ValueError for datasets that cannot share one program,
    :class:`helmholtz_pinn.sharding.DeviceMemoryError` when they do not fit the device(s),
    :class:`helmholtz_pinn.train.DivergenceError` when a member diverges.
    """
    cfg = (config or Config()).replace(**overrides)
    preps, state, history, n_dev, t0 = _fit_many(datasets, cfg, devices, progress, callback)
    ens = cfg.ensemble
    results = []
    for i, (dataset, prep) in enumerate(zip(datasets, preps, strict=True)):
        rows, member = _member(state, i, ens)
        results.append(
            inversion.build_result(
                dataset,
                cfg,
                prep,
                member,
                [train.member_record(r, rows) for r in history],
                t0,
                batch_members=len(datasets),
                batch_index=i,
                devices=n_dev,
            )
        )
    return results


def slice_datasets(dataset: Dataset) -> tuple[list[Dataset], list[int]]:
    """The z-slices of a 3-D dataset as 2-D datasets (spacing[:2]), with their indices;
    slices whose mask is empty are left out."""
    if dataset.ndim != 3:
        raise ValueError(
            f"slicewise inversion needs a 3-D dataset (u of shape "
            f"(F, C, nx, ny, nz)); got u of shape {dataset.u.shape}"
        )
    keep = [k for k in range(dataset.grid[2]) if dataset.mask[..., k].any()]

    def cut(a, k):
        return None if a is None else a[..., k]

    slices = [
        Dataset(
            u=dataset.u[..., k],
            frequency=dataset.frequency,
            spacing=dataset.spacing[:2],
            mask=dataset.mask[..., k],
            mu=cut(dataset.mu, k),
            regions=cut(dataset.regions, k),
            rho=dataset.rho,
        )
        for k in keep
    ]
    return slices, keep


def invert_slicewise(
    dataset: Dataset,
    config: Config | None = None,
    *,
    devices: int | str | None = None,
    progress: bool = True,
    callback: Callable[[dict], bool | None] | None = None,
    **overrides,
) -> Result:
    """Fit every z-slice of a 3-D dataset with its own 2-D PINN, all in one batched program.

    Slices share the in-plane spacing and one mu_ref (see :func:`invert_many`). The
    Result is on the original grid: ``mu`` (F, nx, ny, nz) in Pa and ``u_fit``
    (F, C, nx, ny, nz); slices with an empty mask are not fitted and hold NaN
    (``metrics["slices_skipped"]``). ``history`` records hold one value per fitted slice
    (times E with an ensemble); ``params``/``consts`` are stacked over the fitted slices.
    Metrics are computed on the whole volume against the dataset's ground truth.
    """
    from helmholtz_pinn import metrics

    cfg = (config or Config()).replace(**overrides)
    slices, keep = slice_datasets(dataset)
    preps, state, history, n_dev, t0 = _fit_many(slices, cfg, devices, progress, callback)
    ens = cfg.ensemble
    mu = np.full((dataset.n_freq, *dataset.grid), np.nan + 0j)
    mu_std = mu.copy() if ens > 1 else None
    u_fit = np.full(dataset.u.shape, np.nan + 0j)
    for i, (sl, prep, k) in enumerate(zip(slices, preps, keep, strict=True)):
        _, member = _member(state, i, ens)
        r = inversion.build_result(sl, cfg, prep, member, [], t0)
        mu[..., k], u_fit[..., k] = r.mu, r.u_fit
        if mu_std is not None:
            mu_std[..., k] = r.mu_std
    facts = inversion.run_facts(
        preps[0],
        cfg,
        state,
        history,
        time.perf_counter() - t0,
        devices=n_dev,
        mode="slicewise",
        slices_fitted=keep,
        slices_skipped=[k for k in range(dataset.grid[2]) if k not in keep],
    )
    facts.update(metrics.evaluate(mu, dataset))
    return Result(
        mu,
        u_fit,
        dataset.mask,
        dataset.frequency,
        history,
        facts,
        cfg,
        state.params,
        state.consts,
        dataset,
        mu_std,
    )
