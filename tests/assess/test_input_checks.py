"""Plausibility at the door: unit slips of frequency and spacing, empty components and a
NaN background are caught before any fit, with the likely correction in the message;
``force`` and ``drop_empty_components`` override; the project's own datasets pass."""

import dataclasses
import json

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.assess import input_checks
from helmholtz_pinn.cli import commands as cli_module
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DatasetError, InputError
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.fit.plan import prepare_one
from helmholtz_pinn.forward import phantoms
from helmholtz_pinn.io import dataset as data

TWO_PI = 2 * np.pi
SLIPS = {
    "kHz": (dict(frequency=[0.06, 0.09]), r"looks like kHz: 0\.06 -> 60 Hz, 0\.09 -> 90 Hz\?"),
    "rad/s": (
        dict(frequency=[TWO_PI * 60, TWO_PI * 90]),
        r"377, 565\.5 looks like rad/s: 60, 90 Hz\?",
    ),
    "rad/s high": (
        dict(frequency=[TWO_PI * 6e3, TWO_PI * 9e3]),
        r"looks like rad/s: 6000, 9000 Hz\?",
    ),
    "mm as m": (dict(spacing=[1.0, 1.0]), r"1, 1 m looks like mm: 0\.001, 0\.001 m\?"),
    "below 1 um": (dict(spacing=[1e-7, 1e-7]), r"below 1 um.*0\.0001, 0\.0001 m\?"),
}


@pytest.mark.parametrize("slip", SLIPS)
def test_unit_slips_raise_with_the_correction_and_pass_with_force(slip):
    fields, message = SLIPS[slip]
    bad = dataclasses.replace(plane_wave_dataset(), **{k: np.asarray(v) for k, v in fields.items()})
    with pytest.raises(InputError, match=message):
        input_checks.check(bad)
    notes = input_checks.check(bad, force=True)
    assert notes and all(n.startswith("plausibility check overridden (force)") for n in notes)


def test_the_projects_datasets_pass():
    four = phantoms.simulate_phantom("four-target")  # the others measured alike (~3 kPa)
    sets = [four, dataclasses.replace(four, u=phantoms.add_noise(four.u, -20, 0))]
    sets += [plane_wave_dataset(), plane_wave_dataset(n=24, freqs=(120.0,))]
    sets += [data.example("elastic-two-ellipse-slice")]
    for d in sets:
        assert input_checks.check(d) == []


def test_a_field_without_a_wave_names_the_wavelength():
    """A nearly uniform field: the wavelength is many fields of view (stated in mm)."""
    d = plane_wave_dataset()
    flat = dataclasses.replace(d, u=np.ones_like(d.u) + 1e-3 * d.u)
    with pytest.raises(InputError, match=r"shear wavelength at 60 Hz is [\d.]+ mm = [\d.]+ fields"):
        input_checks.check(flat)


def _third(d, scale):
    """``d`` with a third component ``scale`` times the first."""
    return dataclasses.replace(d, u=np.concatenate([d.u, scale * d.u[:, :1]], axis=1))


@pytest.mark.parametrize(("scale", "what"), [(0.0, "all zero"), (1e-14, "negligible")])
def test_empty_components_raise_or_are_dropped(scale, what):
    d = _third(plane_wave_dataset(), scale)
    with pytest.raises(
        InputError, match=f"component 2 \\(0-based\\) is {what}.* in the mask at 60, 90 Hz"
    ):
        input_checks.check(d)
    dropped, which = input_checks.drop_empty_components(d)
    assert which == [2] and dropped.n_comp == 2 and input_checks.check(dropped) == []
    partial = d.u.copy()
    partial[1, 2] = d.u[1, 0]  # empty at 60 Hz only: not droppable
    with pytest.raises(InputError, match="component 2 .* empty at 60 Hz but not at every"):
        input_checks.drop_empty_components(dataclasses.replace(d, u=partial))


@pytest.mark.filterwarnings("ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning")
def test_invert_records_dropped_components_and_forced_notes():
    d = _third(plane_wave_dataset(), 0.0)
    with pytest.raises(InputError, match="component 2"):
        inversion.invert(d, Config(**SMALL), progress=False)
    res = inversion.invert(d, Config(**SMALL), progress=False, drop_empty_components=True)
    assert res.metrics["dropped_components"] == [2] and res.mu.shape[-2:] == d.grid
    assert any("dropped the empty component(s) [2]" in n for n in res.metrics["notes"])
    forced = dataclasses.replace(plane_wave_dataset(), frequency=np.array([0.06, 0.09]))
    res = inversion.invert(forced, Config(**SMALL), progress=False, force=True)
    assert any("looks like kHz" in n for n in res.metrics["notes"])


def test_nan_outside_the_mask_is_accepted_and_inside_refused():
    d = plane_wave_dataset()
    mask = np.zeros(d.grid, bool)
    mask[2:-2, 2:-2] = True
    u = np.where(mask, d.u, np.nan)
    masked = data.Dataset(u=u, frequency=d.frequency, spacing=d.spacing, mask=mask)
    assert np.isfinite(masked.u).all() and (masked.u[..., ~mask] == 0).all()
    assert input_checks.check(masked) == []
    prep = prepare_one(masked, Config(**SMALL))
    assert np.isfinite(prep.problem.u).all() and len(prep.problem.x) == mask.sum()
    inside = u.copy()
    inside[0, 1, 5, 6] = np.nan
    with pytest.raises(DatasetError, match=r"inside the mask .*first at index \(0, 1, 5, 6\)"):
        data.Dataset(u=inside, frequency=d.frequency, spacing=d.spacing, mask=mask)


def test_cli_refuses_an_implausible_file_in_one_line_without_output(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    d = plane_wave_dataset()
    data.save(dataclasses.replace(d, spacing=np.array([1.0, 1.0])), bad)
    out = tmp_path / "X"
    assert cli_module.main(["invert", str(bad), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "looks like mm: 0.001, 0.001 m?" in err[0] and "--force" in err[0]
    assert not out.exists()
    assert cli_module.main(["baseline", str(bad), "--out", str(out)]) == 2
    assert not out.exists()
    assert cli_module.main(["baseline", str(bad), "--out", str(out), "--force"]) == 0
    notes = json.loads((out / "metrics.json").read_text())["notes"]
    assert any("looks like mm" in n for n in notes)
