"""The plan changes no map: tiny fits give the maps that the code before it (e34d7d5, the
settings rewritten in place) gave for the same seeds, stored in
``data/maps_e34d7d5.npz``: one fit, a batch of two, and a request cut for an L-BFGS
phase. Bitwise equal on the CPU they were recorded on; the tolerance allows another
CPU's float32 rounding."""

from pathlib import Path

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.fit.inversion import invert

pytestmark = pytest.mark.filterwarnings(
    "ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning"
)
BEFORE = Path(__file__).parent / "data" / "maps_e34d7d5.npz"


def _same(mu, name):
    with np.load(BEFORE) as before:
        np.testing.assert_allclose(mu, before[name], rtol=1e-5, atol=1e-3)  # Pa


def test_one_fit_and_a_batch_give_the_maps_of_before():
    d = plane_wave_dataset()
    _same(invert(d, progress=False, **SMALL).mu, "single")
    batch = invert([d, plane_wave_dataset(g=2500.0)], progress=False, **SMALL)
    _same(batch[0].mu, "batch_0")
    _same(batch[1].mu, "batch_1")


def test_a_request_cut_for_the_lbfgs_phase_gives_the_map_of_before():
    settings = {**SMALL, "steps": 20, "lbfgs_from": 10, "lbfgs_steps": 4}
    result = invert(plane_wave_dataset(), progress=False, **settings)
    _same(result.mu, "lbfgs")
    assert result.metrics["steps"] == 10 and result.metrics["plan"]["steps_asked"] == 20
    assert result.config.steps == 10 and result.config.lbfgs_steps == 4  # config.json
