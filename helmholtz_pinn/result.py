"""The result of an inversion (PINN or baseline): maps in Pa, history, metrics; saving.

:func:`make_result` is the one place a :class:`Result` is built: from the modulus maps
of one or more members (ensemble seeds), whose mean is the answer and whose spread is
``mu_std``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from helmholtz_pinn.data import Dataset


@dataclasses.dataclass
class Result:
    """A finished inversion.

    Attributes:
      mu: complex shear modulus, Pa, shape ``(F, *grid)`` (one map per frequency; a
        baseline gives one map of shape ``grid``).
      u_fit: the network's displacement field, data units, shape ``(F, C, *grid)``.
      mask: the voxels that were fitted.
      frequency: Hz.
      history: one record per block (step, time_s, lr, losses).
      metrics: run facts and, with ground truth, accuracy metrics.
      config: the settings used (a :class:`~helmholtz_pinn.config.Config` for the PINN, a
        dict for a baseline). params/consts: trained network parameters.
      mu_std: ensemble standard deviation of Re and Im of mu, Pa (None for one fit).
    """

    mu: np.ndarray
    u_fit: np.ndarray
    mask: np.ndarray
    frequency: np.ndarray
    history: list[dict]
    metrics: dict
    config: Any
    params: Any = None
    consts: Any = None
    dataset: Dataset | None = None
    mu_std: np.ndarray | None = None

    @property
    def storage_modulus(self) -> np.ndarray:
        """G' = Re(mu), Pa, on the grid (first frequency)."""
        return (self.mu if self.mu.ndim == self.mask.ndim else self.mu[0]).real

    def save(self, out: str | Path) -> Path:
        """Write mu.npz (Pa), metrics.json, history.csv, config.json and the figures."""
        from helmholtz_pinn import figures, outputs

        out = outputs.prepare_dir(out)
        extra = {} if self.mu_std is None else {"mu_std": self.mu_std}
        np.savez(
            out / "mu.npz", mu=self.mu, mask=self.mask, frequency=self.frequency, unit="Pa", **extra
        )
        outputs.write_json(out / "metrics.json", self.metrics)
        outputs.write_history(out / "history.csv", self.history)
        settings = self.config
        if dataclasses.is_dataclass(settings):
            settings = dataclasses.asdict(settings)
        (out / "config.json").write_text(json.dumps(settings, indent=2))
        if self.dataset is not None:
            figures.save_all(self, self.dataset, out)
        return out

    def plot(self):
        """The modulus figure (recovered, truth and error when known)."""
        from helmholtz_pinn import figures

        return figures.modulus_figure(self.mu, self.dataset)


def make_result(
    dataset: Dataset,
    config: Any,
    mus: np.ndarray,
    u_fit: np.ndarray,
    facts: dict,
    history: list[dict] | None = None,
    state=None,
) -> Result:
    """A Result from member maps ``mus`` (E, F, *grid) or (E, *grid) in Pa (E >= 1) and
    the fitted field ``u_fit``: mu is their mean, mu_std their spread (E > 1); accuracy
    metrics against the dataset's ground truth are added to ``facts``."""
    from helmholtz_pinn import metrics

    mus = np.asarray(mus)
    mu = mus.mean(axis=0)
    mu_std = mus.real.std(axis=0) + 1j * mus.imag.std(axis=0) if len(mus) > 1 else None
    facts = {**facts, "unit_mu": "Pa", **metrics.evaluate(mu, dataset)}
    return Result(
        mu=mu,
        u_fit=u_fit,
        mask=dataset.mask,
        frequency=dataset.frequency,
        history=history or [],
        metrics=facts,
        config=config,
        params=None if state is None else state.params,
        consts=None if state is None else state.consts,
        dataset=dataset,
        mu_std=mu_std,
    )
