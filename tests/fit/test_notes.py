"""Run notes: what a user should know about how the run went (rounded steps, early stop,
a fit inside the PDE warm-up or too short for the schedule), and the short-run warning."""

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.assess.fit_checks import FitQualityWarning
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import inversion, run_facts
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.pinn import forms


def _notes(facts: dict, **settings) -> list[str]:
    """The run notes of a plane-wave fit planned with ``settings`` that ran to ``facts``."""
    cfg = Config(mu_ref=3000.0, **settings)
    return run_facts.run_notes(_plan(cfg), facts)


def _plan(cfg: Config):
    """The plan of a plane-wave fit (two components) with ``cfg`` on one device."""
    return run_plan.plan(
        [plane_wave_dataset()], cfg, form=forms.get(forms.resolve(cfg.pde, 2)), devices=1
    )


def test_notes_name_rounding_early_stop_warmup_and_schedule():
    cfg = dict(steps=250, sync_interval=100, pde_warmup=1000, plateau_patience=5)
    notes = _notes({"steps": 200}, **cfg)
    assert notes[0] == "steps=250 rounded up to 300: a whole number of sync_interval=100 blocks"
    assert notes[1].startswith("stopped early at step 200 of 300")
    assert notes[2].startswith("short run: the fit ended at step 200, before the PDE weight")
    assert len(notes) == 3
    schedule = _notes({"steps": 500}, **{**cfg, "steps": 500, "pde_warmup": 100})
    assert schedule == [
        "short run: 500 steps are at most plateau_patience=5 blocks: the learning-rate "
        "schedule never acted"
    ]
    assert _notes({"steps": 1000}, **{**cfg, "steps": 1000, "pde_warmup": 100}) == []
    assumption = _notes({"steps": 10000, "assumption": "2-D slice"})
    assert assumption == ["2-D slice"]
    rim = _notes({"steps": 10000, "pde_margin": 3, "pde_fraction": 0.8724})
    assert rim == [
        "the PDE residual within 3 voxel(s) of the field of view's in-plane edges was left "
        "out of the loss (13% of the mask's voxels): the modulus there is the mu-network's "
        "continuation from inside (pde_margin; 0 fits the PDE everywhere)"
    ]
    assert _notes({"steps": 10000, "pde_margin": 0}) == []
    inside = {"steps": 10000, "pde_margin": 3, "pde_fraction": 1.0}  # an organ mask
    assert _notes(inside) == []


def test_a_request_cut_for_the_lbfgs_phase_is_said_plainly():
    """steps=20000 with an L-BFGS phase runs lbfgs_from Adam steps and the phase: the plan
    records both what was asked and what runs, and a note says so."""
    cfg = Config(mu_ref=3000.0, steps=20000, lbfgs_steps=40, lbfgs_from=5000)
    plan = _plan(cfg)
    assert (plan.steps, plan.lbfgs_steps, plan.settings().steps) == (5000, 40, 5000)
    record = plan.record
    assert (record["steps_asked"], record["steps"], record["lbfgs_steps"]) == (20000, 5000, 40)
    assert run_facts.run_notes(plan, {"steps": 5000}) == [
        "steps=20000 asked; 5000 Adam steps ran (lbfgs_from=5000) and then an L-BFGS phase "
        "of 40 iterations"
    ]


def test_a_fit_inside_the_warm_up_warns_and_records_it():
    """Also: with a PDE margin of 3 voxels on 16 x 16, 100 of 256 voxels keep their PDE
    residual; metrics.json records the fraction and a note says what was left out."""
    cfg = Config(**{**SMALL, "steps": 10, "pde_warmup": 50, "pde_margin": 3})
    with pytest.warns(FitQualityWarning, match="before the PDE weight finished its warm-up"):
        res = inversion.invert(plane_wave_dataset(), cfg, progress=False, devices=1)
    assert any(n.startswith("short run") for n in res.metrics["notes"])
    assert res.metrics["pde_margin"] == 3 and res.metrics["pde_fraction"] == round(100 / 256, 4)
    assert any("(61% of the mask's voxels)" in n for n in res.metrics["notes"])
    assert prepare_one(plane_wave_dataset(), Config(**SMALL)).pde_fraction == 1.0


@pytest.mark.parametrize("scale", [1e20, 1e-30])
def test_the_amplitude_of_u_does_not_change_the_map(scale):
    """The equations are linear in u: u scaled by 1e20 (which overflows float32 when
    squared) or 1e-30 (which underflows) gives the modulus of u, and its fitted field in
    the data's unit."""
    import dataclasses

    data = plane_wave_dataset(n=12)
    cfg = Config(**{**SMALL, "mu_ref": None})
    base = inversion.invert(data, cfg, progress=False, devices=1)
    big = dataclasses.replace(data, u=(data.u * scale).astype(np.complex64))
    res = inversion.invert(big, cfg, progress=False, devices=1)
    np.testing.assert_allclose(res.mu, base.mu, rtol=1e-5)
    np.testing.assert_allclose(res.u_fit / scale, base.u_fit, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(res.dataset.u, big.u)


def test_warnings_point_at_the_users_call():
    """A fit-quality warning is attributed to the line that called invert (this file),
    not to a line of the library."""
    with pytest.warns(FitQualityWarning) as record:
        inversion.invert(plane_wave_dataset(n=12), Config(**SMALL), progress=False, devices=1)
    assert {w.filename for w in record} == {__file__}
