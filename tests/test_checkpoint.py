"""Resume that says what it does: a resumed fit continues from the saved step, equals the
uninterrupted fit bit for bit (CPU, same seed) and records where it came from; an empty
folder is noted (or refused under resume="strict"); other data are refused by name."""

import dataclasses
import shutil

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import CheckpointError, ConfigError
from helmholtz_pinn.inversion import invert

CFG = Config(**{**SMALL, "checkpoint_every": 1})  # 2 blocks of 5 steps, saved after each
RUN = dict(progress=False, devices=1)
pytestmark = pytest.mark.filterwarnings("ignore::helmholtz_pinn.quality.FitQualityWarning")


def _stop_after_first_block(record):
    return True


@pytest.fixture(scope="module")
def data():
    return plane_wave_dataset(n=12)


@pytest.fixture(scope="module")
def interrupted(data, tmp_path_factory):
    """A folder holding only the checkpoint of step 5 (the fit stopped after block 1)."""
    folder = tmp_path_factory.mktemp("run") / "checkpoints"
    invert(data, CFG, checkpoint_dir=folder, callback=_stop_after_first_block, **RUN)
    assert sorted(p.name for p in folder.iterdir() if p.name.isdigit()) == ["5"]
    return folder


def test_resume_continues_from_the_saved_step_and_says_so(data, interrupted, tmp_path):
    folder = shutil.copytree(interrupted, tmp_path / "checkpoints")  # the fixture stays at 5
    resumed = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    whole = invert(data, CFG, checkpoint_dir=tmp_path / "whole", **RUN)
    facts = resumed.metrics
    assert facts["resumed_from_step"] == 5 and facts["steps"] == 10
    note = f"resumed from step 5 of 10 ({folder.absolute() / '5'})"
    assert note in facts["notes"]
    assert whole.metrics["resumed_from_step"] is None
    assert not any(n.startswith("resumed") for n in whole.metrics["notes"])
    np.testing.assert_array_equal(resumed.mu, whole.mu)  # bitwise on the CPU


def test_resume_with_an_empty_folder_notes_and_starts_at_step_0(data, tmp_path):
    res = invert(data, CFG, checkpoint_dir=tmp_path / "empty", resume=True, **RUN)
    assert res.metrics["resumed_from_step"] is None and res.metrics["steps"] == 10
    assert (
        f"no usable checkpoint in {tmp_path / 'empty'}: started at step 0" in (res.metrics["notes"])
    )


def test_strict_resume_without_a_checkpoint_raises(data, tmp_path):
    with pytest.raises(CheckpointError, match="no usable checkpoint in .*empty"):
        invert(data, CFG, checkpoint_dir=tmp_path / "empty", resume="strict", **RUN)
    with pytest.raises(ConfigError, match="resume must be True, False or 'strict'; got 'yes'"):
        invert(data, CFG, resume="yes", **RUN)


def test_resume_on_other_frequencies_names_them(interrupted):
    other = plane_wave_dataset(n=12, freqs=(60.0, 80.0))
    with pytest.raises(CheckpointError) as err:
        invert(other, CFG, checkpoint_dir=interrupted, resume=True, **RUN)
    msg = str(err.value)
    assert "written for data with frequencies [60, 90] Hz; these have [60, 80]" in msg
    assert "\n" not in msg


def test_resume_on_a_changed_u_value_is_refused(data, interrupted):
    u = data.u.copy()
    u[0, 0, 3, 3] *= 1.01
    with pytest.raises(CheckpointError, match="other values of u or the mask"):
        invert(dataclasses.replace(data, u=u), CFG, checkpoint_dir=interrupted, resume=True, **RUN)
