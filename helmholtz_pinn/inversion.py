"""The library entry point: ``invert(dataset, config) -> Result``.

Bridges physical units at the edges (Pa, m, Hz) and the nondimensional training:
coordinates by the field of view L (m), u by its RMS per frequency and component,
mu by ``mu_ref`` (Pa).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from helmholtz_pinn import physics, train
from helmholtz_pinn.config import Config
from helmholtz_pinn.data import Dataset


@dataclasses.dataclass
class Prepared:
    """A dataset in nondimensional form, plus what is needed to map back to Pa."""

    problem: train.Problem
    spec: train.Spec
    scales: physics.Scales
    x_grid: np.ndarray  # (prod(grid), d) nondimensional coordinates of every voxel
    u_scale: np.ndarray  # (F, C) RMS of u, the data's unit


def field_of_view(dataset: Dataset) -> float:
    """L = the largest extent (n - 1) h of the grid, m."""
    return float(max((n - 1) * h for n, h in zip(dataset.grid, dataset.spacing, strict=True)))


def grid_coordinates(dataset: Dataset, length: float) -> np.ndarray:
    """Voxel-centre coordinates x / L, shape (prod(grid), d), C order of the grid."""
    axes = [np.arange(n) * h / length for n, h in zip(dataset.grid, dataset.spacing, strict=True)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1).astype(np.float32)


def reference_modulus(dataset: Dataset, cfg: Config) -> float:
    """mu_ref in Pa: the configured value, else a robust estimate from the data."""
    if cfg.mu_ref is not None:
        return float(cfg.mu_ref)
    from helmholtz_pinn.baselines import estimate_modulus

    return float(estimate_modulus(dataset))


def wave_cycles(dataset: Dataset, mu_ref: float) -> float:
    """Shortest expected wavelengths per field of view: L / lambda_min, with
    lambda_min = sqrt(mu_ref / rho) / f_max (m; mu_ref in Pa, f in Hz)."""
    length = field_of_view(dataset)
    return length * float(np.max(dataset.frequency)) / float(np.sqrt(mu_ref / dataset.rho))


def prepare(dataset: Dataset, cfg: Config, *, on_device: bool = True) -> Prepared:
    """Scale the dataset and derive the Fourier scales (cycles per field of view).

    Auto scale: sigma = factor * L / lambda_min with lambda_min = sqrt(mu_ref / rho) / f_max.
    With ``on_device`` the Problem's arrays are put on the default device, after a check
    that they fit its memory (:func:`helmholtz_pinn.sharding.check_device_memory`);
    otherwise they stay NumPy arrays on the host (for batched or sharded placement).
    """
    length = field_of_view(dataset)
    mu_ref = reference_modulus(dataset, cfg)
    scales = physics.make_scales(dataset.frequency, length, mu_ref, dataset.rho)
    cycles = wave_cycles(dataset, mu_ref)
    sigma_u = cfg.sigma_u or cfg.sigma_factor_u * cycles
    sigma_mu = cfg.sigma_mu or cfg.sigma_factor_mu * cycles
    mask = dataset.mask.ravel()
    u = dataset.u.reshape(dataset.n_freq, dataset.n_comp, -1)
    u_scale = np.sqrt(np.mean(np.abs(u[..., mask]) ** 2, axis=-1))
    u_nd = np.moveaxis(u[..., mask] / u_scale[..., None], -1, 0).astype(np.complex64)
    x_grid = grid_coordinates(dataset, length)
    problem = train.Problem(
        x_grid[mask],
        u_nd,
        np.asarray(scales.kappa, np.float32),
        np.asarray(scales.omega_ratio, np.float32),
        np.asarray(int(mask.sum()), np.int32),
    )
    if on_device:
        from helmholtz_pinn.sharding import check_device_memory

        check_device_memory(int(mask.sum()), dataset.ndim, dataset.n_freq, dataset.n_comp)
        problem = train.Problem(*(jnp.asarray(a) for a in problem))
    spec = train.Spec(
        dataset.ndim, dataset.n_freq, dataset.n_comp, float(sigma_u), float(sigma_mu), cfg
    )
    return Prepared(problem, spec, scales, x_grid, u_scale)


@dataclasses.dataclass
class Result:
    """A finished inversion.

    Attributes:
      mu: complex shear modulus, Pa, shape ``(F, *grid)`` (one map per frequency; the
        baseline writes one map of shape ``grid``).
      u_fit: the network's displacement field, data units, shape ``(F, C, *grid)``.
      mask: the voxels that were fitted.
      history: one record per block (step, time_s, lr, losses).
      metrics: run facts and, with ground truth, accuracy metrics.
      config: the configuration used. params/consts: trained network parameters.
      mu_std: ensemble standard deviation of Re and Im of mu, Pa (None for one fit).
    """

    mu: np.ndarray
    u_fit: np.ndarray
    mask: np.ndarray
    frequency: np.ndarray
    history: list[dict]
    metrics: dict
    config: Config
    params: Any = None
    consts: Any = None
    dataset: Dataset | None = None
    mu_std: np.ndarray | None = None

    @property
    def storage_modulus(self) -> np.ndarray:
        """G' = Re(mu), Pa, on the grid (first frequency)."""
        return (self.mu if self.mu.ndim == self.mask.ndim else self.mu[0]).real

    def save(self, out: str | Path) -> Path:
        """Write mu.npz, metrics.json, history.csv and the figures into ``out``."""
        from helmholtz_pinn import figures, outputs

        out = outputs.prepare_dir(out)
        extra = {} if self.mu_std is None else {"mu_std": self.mu_std}
        np.savez(
            out / "mu.npz", mu=self.mu, mask=self.mask, frequency=self.frequency, unit="Pa", **extra
        )
        outputs.write_json(out / "metrics.json", self.metrics)
        outputs.write_history(out / "history.csv", self.history)
        (out / "config.json").write_text(json.dumps(dataclasses.asdict(self.config), indent=2))
        if self.dataset is not None:
            figures.save_all(self, self.dataset, out)
        return out

    def plot(self):
        """The modulus figure (recovered, truth and error when known)."""
        from helmholtz_pinn import figures

        return figures.modulus_figure(self.mu, self.dataset)


def invert(
    dataset: Dataset,
    config: Config | None = None,
    *,
    callback: Callable[[dict], bool | None] | None = None,
    progress: bool = True,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    **overrides,
) -> Result:
    """Fit the PINN to ``dataset`` and return the modulus in Pa.

    ``overrides`` replace fields of ``config`` (e.g. ``steps=2000, pde="helmholtz"``).
    With ``checkpoint_dir`` the fit is checkpointed every ``checkpoint_every`` blocks and,
    with ``resume``, continues from the newest checkpoint there. With ``ensemble`` E > 1
    the E fits train as one vmapped program and ``Result.mu_std`` holds their spread.
    Raises :class:`helmholtz_pinn.train.DivergenceError` if the fit diverges.
    """
    cfg = (config or Config()).replace(**overrides)
    t0 = time.perf_counter()
    prep = prepare(dataset, cfg)
    state = train.init_members(prep.spec, cfg.seed, cfg.ensemble)
    batched = None if cfg.ensemble == 1 else "shared"
    host, ckpt = None, None
    if checkpoint_dir is not None:
        from helmholtz_pinn.checkpoint import Checkpointer

        ckpt = Checkpointer(checkpoint_dir, cfg, cfg.checkpoint_every)
        restored = ckpt.restore(state) if resume else None
        if restored is not None:
            state, host = restored
    try:
        state, history = train.fit(
            state,
            prep.problem,
            prep.spec,
            batched=batched,
            host=host,
            callback=callback,
            on_block=ckpt,
            progress=progress,
        )
    finally:
        if ckpt is not None:
            ckpt.close()
    return build_result(dataset, cfg, prep, state, history, t0)


def run_facts(
    prep: Prepared,
    cfg: Config,
    state: train.TrainState,
    history: list[dict],
    wall_s: float,
    **extra,
) -> dict:
    """The run facts of ``metrics.json``: steps, wall time (s), device, scales, final
    losses (nondimensional), retries; ``extra`` adds or overrides entries."""
    last = history[-1] if history else {}
    return {
        "steps": int(np.asarray(state.step).max()),
        "wall_time_s": wall_s,
        "device": str(jax.devices()[0]),
        "ensemble": cfg.ensemble,
        "mu_ref_pa": prep.scales.mu_ref,
        "length_m": prep.scales.length,
        "sigma_u": prep.spec.sigma_u,
        "sigma_mu": prep.spec.sigma_mu,
        **{f"final_{k}": last.get(f"last_{k}") for k in ("loss", "data", "pde")},
        "retries": last.get("retries", 0),
        "unit_mu": "Pa",
        **extra,
    }


def build_result(
    dataset: Dataset,
    cfg: Config,
    prep: Prepared,
    state: train.TrainState,
    history: list[dict],
    t0: float,
    **facts,
) -> Result:
    """Evaluate a trained state on every voxel (in chunks) and convert to Pa.

    ``state`` holds one fit, or ``cfg.ensemble`` fits stacked on a leading axis (then
    ``mu`` is their mean and ``mu_std`` their spread). ``t0`` is the run's start
    (``time.perf_counter()``); ``facts`` are added to the run facts in ``metrics``.
    """
    from helmholtz_pinn import metrics

    ensemble = cfg.ensemble > 1
    members = train.unstack_tree(state, cfg.ensemble) if ensemble else [state]
    fields = [train.predict(m, prep.spec, prep.x_grid, prep.scales.omega_ratio) for m in members]
    wall = time.perf_counter() - t0
    mus = np.stack([to_grid(mu_nd, dataset) * prep.scales.mu_ref for _, mu_nd in fields])
    u_fit = np.mean([to_grid(u_nd, dataset) for u_nd, _ in fields], axis=0)
    u_fit *= prep.u_scale.reshape(prep.u_scale.shape + (1,) * dataset.ndim)
    mu = mus.mean(axis=0)
    mu_std = mus.real.std(axis=0) + 1j * mus.imag.std(axis=0) if ensemble else None
    run = run_facts(prep, cfg, state, history, wall, **facts)
    run.update(metrics.evaluate(mu, dataset))
    return Result(
        mu,
        u_fit,
        dataset.mask,
        dataset.frequency,
        history,
        run,
        cfg,
        state.params,
        state.consts,
        dataset,
        mu_std,
    )


def to_grid(values: np.ndarray, dataset: Dataset) -> np.ndarray:
    """Per-voxel values (prod(grid), *channels) -> (*channels, *grid)."""
    values = np.moveaxis(values, 0, -1)
    return values.reshape(values.shape[:-1] + dataset.grid)
