"""Resume that says what it does: a resumed fit continues from the saved step, equals the
uninterrupted fit bit for bit (CPU, same seed) and records where it came from; an empty
folder is noted (or refused under resume="strict"); other data are refused by name."""

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset, plane_wave_slices, volume

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import CheckpointError, ConfigError, OutputError
from helmholtz_pinn.fit import checkpoints
from helmholtz_pinn.fit.inversion import invert

CFG = Config(**{**SMALL, "checkpoint_every": 1})  # 2 blocks of 5 steps, saved after each
RUN = dict(progress=False, devices=1)
pytestmark = pytest.mark.filterwarnings(
    "ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning"
)


@pytest.fixture(scope="module", autouse=True)
def every_block():
    """These tests need the checkpoints of every block: no interval between them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints, "MIN_INTERVAL_S", 0.0)
        yield


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


# --- every kind of run: the stacked state is one pytree whatever the member count -------


def _mu(result):
    return np.stack([r.mu for r in result]) if isinstance(result, list) else result.mu


KINDS = {
    "ensemble of 2 seeds x batch of 2 datasets, members split over 4 devices": (
        lambda d: [d, dataclasses.replace(d, u=d.u * 1.1)],
        dict(ensemble=2, devices=4),
    ),
    "slicewise volume": (
        lambda d: plane_wave_slices(n=12),
        dict(slicewise=True, force=True, devices=1),
    ),
    # test_layout's volume and batch: its compiled data-parallel block is reused
    "data parallel over 4 devices": (lambda d: volume(), dict(devices=4, batch_size=256)),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_run_resumes_to_the_uninterrupted_modulus(kind, data, tmp_path):
    """Checkpoints at steps 5 and 10; the one of step 10 removed (as if killed between
    the two writes); resume="strict" continues from step 5 and ends bit for bit at the
    uninterrupted modulus (CPU, same seed)."""
    make, run = KINDS[kind]
    folder, inputs = tmp_path / "checkpoints", make(data)
    whole = invert(inputs, CFG, checkpoint_dir=folder, progress=False, **run)
    shutil.rmtree(folder / "10")
    resumed = invert(inputs, CFG, checkpoint_dir=folder, resume="strict", progress=False, **run)
    first = resumed[0] if isinstance(resumed, list) else resumed
    assert first.metrics["resumed_from_step"] == 5 and first.metrics["steps"] == 10
    np.testing.assert_array_equal(_mu(resumed), _mu(whole))


def test_the_fingerprint_covers_every_member(data, tmp_path):
    make, run = KINDS[next(iter(KINDS))]  # the layout compiled above: no new compile
    folder = tmp_path / "checkpoints"
    stop = _stop_after_first_block
    invert(make(data), CFG, checkpoint_dir=folder, callback=stop, progress=False, **run)
    other = [data, dataclasses.replace(data, u=data.u * 1.2)]
    with pytest.raises(CheckpointError, match=r"other values of u or the mask \(dataset 1\)"):
        invert(other, CFG, checkpoint_dir=folder, resume=True, progress=False, **run)


def test_resume_on_another_device_count_names_the_devices(data, tmp_path):
    """An ensemble of 3 on 4 devices is padded to 4 stacked fits; resuming it on one
    device (3 fits) is refused with the reason and the remedy, not called corrupt."""
    folder = tmp_path / "checkpoints"
    stop = _stop_after_first_block
    run = dict(ensemble=3, progress=False, checkpoint_dir=folder)
    invert(data, CFG, callback=stop, devices=4, **run)
    with pytest.raises(CheckpointError, match=r"holds 4 stacked fits .* this run has 3: resume"):
        invert(data, CFG, resume=True, devices=1, **run)


# --- faults: a write killed half way, a corrupt checkpoint -----------------------------


@pytest.fixture(scope="module")
def finished(data, tmp_path_factory):
    """(folder with the checkpoints of steps 5 and 10, the uninterrupted modulus)."""
    folder = tmp_path_factory.mktemp("finished") / "checkpoints"
    return folder, invert(data, CFG, checkpoint_dir=folder, **RUN).mu


def test_a_write_killed_half_way_is_ignored(finished, tmp_path):
    """orbax writes step 10 into ``10.orbax-checkpoint-tmp-*`` and renames it when done:
    a kill during the write leaves that folder (here: made from step 10, its files cut
    short) and the resume continues from step 5."""
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    partial = folder / "10.orbax-checkpoint-tmp-1764600000"
    (folder / "10").rename(partial)
    for f in partial.rglob("*"):
        if f.is_file():
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    res = invert(plane_wave_dataset(n=12), CFG, checkpoint_dir=folder, resume="strict", **RUN)
    assert res.metrics["resumed_from_step"] == 5
    np.testing.assert_array_equal(res.mu, finished[1])


def _corrupt(step_folder):
    for f in (step_folder / "state").rglob("*"):
        if f.is_file() and f.parent.name == "d":
            f.write_bytes(b"not a tensorstore chunk")


# orbax's tensorstore callbacks complain after a failed read ("Event loop is closed")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_corrupt_checkpoint_falls_back_to_the_older_one(data, finished, tmp_path):
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    _corrupt(folder / "10")
    res = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert res.metrics["resumed_from_step"] == 5
    note = [n for n in res.metrics["notes"] if "cannot be restored" in n]
    assert len(note) == 1 and note[0].startswith(f"checkpoint {folder.absolute() / '10'}")
    assert note[0].endswith("deleted; resumed from an older one")
    np.testing.assert_array_equal(res.mu, finished[1])
    _corrupt(folder / "10")  # written again by the resumed run
    _corrupt(folder / "5")
    with pytest.raises(CheckpointError, match="cannot be restored .*; remove the folder") as err:
        invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert "\n" not in str(err.value)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_checkpoint_cut_in_half_falls_back_to_the_older_one(data, finished, tmp_path):
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    for f in (folder / "10" / "state").rglob("*"):
        if f.is_file() and f.parent.name == "d":  # the array data; the metadata stay whole
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    res = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert res.metrics["resumed_from_step"] == 5
    np.testing.assert_array_equal(res.mu, finished[1])


def test_whatever_the_storage_layer_raises_falls_back(data, finished, tmp_path, monkeypatch):
    """Some orbax/tensorstore versions raise a bare Exception for a short read
    ("Encountered error while reading array index ... OUT_OF_RANGE"): still a fall back."""
    import orbax.checkpoint as ocp

    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    restore = ocp.CheckpointManager.restore

    def short_read(self, step, *args, **kwargs):
        if step == 10 and "state" in str(kwargs.get("args")):
            raise Exception("Encountered error while reading array index (0,): OUT_OF_RANGE")
        return restore(self, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "restore", short_read)
    res = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert res.metrics["resumed_from_step"] == 5
    np.testing.assert_array_equal(res.mu, finished[1])


def test_a_full_disk_during_a_checkpoint_is_one_line_and_leaves_no_partial_folder(
    data, tmp_path, monkeypatch
):
    """orbax reports a full disk as ``ValueError: RESOURCE_EXHAUSTED ...``: the fit stops
    with one OutputError line that names what is kept, and no temporary folder stays."""
    import orbax.checkpoint as ocp

    folder = tmp_path / "checkpoints"

    def full(self, step, *args, **kwargs):
        (Path(self.directory) / f"{step}.orbax-checkpoint-tmp-1").mkdir(parents=True)
        raise ValueError("RESOURCE_EXHAUSTED: write failed\n No space left on device")

    monkeypatch.setattr(ocp.CheckpointManager, "save", full)
    with pytest.raises(OutputError, match="cannot write checkpoint .*no earlier checkpoint"):
        invert(data, CFG, checkpoint_dir=folder, **RUN)
    assert not list(folder.glob("*.orbax-checkpoint-tmp*"))


def test_a_fresh_fit_removes_an_earlier_runs_checkpoints_and_says_so(data, tmp_path):
    """Without resume, the folder's old checkpoints (here of another seed, stopped at
    step 5) are deleted before the fit, with a note; the folder then holds only this
    run's, so a later resume continues this run, not the old one."""
    folder = tmp_path / "checkpoints"
    invert(
        data, CFG.replace(seed=7), checkpoint_dir=folder, callback=_stop_after_first_block, **RUN
    )
    fresh = invert(data, CFG, checkpoint_dir=folder, callback=_stop_after_first_block, **RUN)
    assert fresh.metrics["cleared_checkpoints"] == f"{folder} (steps 5)"
    assert any("removed an earlier run's checkpoints" in n for n in fresh.metrics["notes"])
    resumed = invert(data, CFG, checkpoint_dir=folder, resume="strict", **RUN)
    assert resumed.metrics["resumed_from_step"] == 5  # this seed's checkpoint: no refusal


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_stop_signal_writes_a_final_checkpoint_and_resume_equals_the_whole_fit(
    name, data, finished, tmp_path
):
    """SIGTERM (what Slurm, Kubernetes and ``timeout`` send) acts as SIGINT: the running
    block finishes, the last good state is checkpointed (step 5, although the periodic
    checkpoints come every 2 blocks here), Interrupted names the signal and its exit
    status, and a resume ends bit for bit at the uninterrupted modulus."""
    import os
    import signal

    from helmholtz_pinn.errors import Interrupted

    folder = tmp_path / "checkpoints"

    def send(record):
        os.kill(os.getpid(), getattr(signal, name))

    with pytest.raises(Interrupted, match=f"interrupted \\({name}\\) at step 5 of 10") as err:
        invert(data, CFG.replace(checkpoint_every=2), checkpoint_dir=folder, callback=send, **RUN)
    assert err.value.exit_status == {"SIGINT": 130, "SIGTERM": 143}[name]
    assert sorted(p.name for p in folder.iterdir() if p.name.isdigit()) == ["5"]
    resumed = invert(data, CFG, checkpoint_dir=folder, resume="strict", **RUN)
    np.testing.assert_array_equal(resumed.mu, finished[1])


def test_a_resume_with_fewer_steps_than_done_says_so(data, finished, tmp_path):
    """--resume --steps 5 on a run that reached step 10: the checkpoint's fit comes back
    and the note does not say "step 10 of 5"."""
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    res = invert(data, CFG.replace(steps=5), checkpoint_dir=folder, resume=True, **RUN)
    note = [n for n in res.metrics["notes"] if n.startswith("resumed from step 10")]
    assert note and "(at or past steps=5: no training)" in note[0]
    np.testing.assert_array_equal(res.mu, finished[1])


def test_an_earlier_runs_checkpoints_survive_until_the_new_run_has_one(data, tmp_path, monkeypatch):
    """A fresh fit into a folder of an earlier run's checkpoints whose own first write
    fails (a full disk): the earlier checkpoint is not lost (set aside in
    ``checkpoints.previous``); once a new checkpoint is written it goes."""
    import orbax.checkpoint as ocp

    folder = tmp_path / "checkpoints"
    invert(
        data, CFG.replace(seed=7), checkpoint_dir=folder, callback=_stop_after_first_block, **RUN
    )
    save = ocp.CheckpointManager.save

    def full(self, step, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ocp.CheckpointManager, "save", full)
    with pytest.raises(OutputError):
        invert(data, CFG, checkpoint_dir=folder, **RUN)
    previous = tmp_path / "checkpoints.previous"
    assert [p.name for p in previous.iterdir()] == ["5"]
    monkeypatch.setattr(ocp.CheckpointManager, "save", save)
    invert(data, CFG, checkpoint_dir=folder, **RUN)
    assert not previous.exists()


# --- round two: what resume must never lose ------------------------------------------


def test_a_resume_after_a_fresh_run_stopped_before_its_first_checkpoint_uses_the_earlier_ones(
    data, interrupted, tmp_path, monkeypatch
):
    """A fresh fit set the earlier run's checkpoint aside (checkpoints.previous) and
    stopped before writing its own: a resume continues the earlier one (step 5), and
    one with other settings is refused by name with the checkpoint kept."""
    import orbax.checkpoint as ocp

    folder = shutil.copytree(interrupted, tmp_path / "checkpoints")

    def full(self, step, *args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(ocp.CheckpointManager, "save", full)
        with pytest.raises(OutputError):
            invert(data, CFG, checkpoint_dir=folder, **RUN)
    assert [p.name for p in (tmp_path / "checkpoints.previous").iterdir()] == ["5"]
    with pytest.raises(CheckpointError, match="settings differ \\(seed: saved 0, now 7\\)"):
        invert(data, CFG.replace(seed=7), checkpoint_dir=folder, resume=True, **RUN)
    assert (folder / "5").is_dir()  # taken back, not deleted
    resumed = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert resumed.metrics["resumed_from_step"] == 5


def _edit_host_item(step_folder: Path, edit) -> None:
    import json

    path = step_folder / "host" / "metadata"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


def test_a_newest_checkpoint_lacking_a_key_falls_back_to_the_older_one(data, finished, tmp_path):
    """Valid JSON without the host state (a checkpoint of another version): one note,
    the older checkpoint used, no KeyError."""
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    _edit_host_item(folder / "10", lambda meta: meta.pop("host"))
    res = invert(data, CFG, checkpoint_dir=folder, resume=True, **RUN)
    assert res.metrics["resumed_from_step"] == 5
    note = [n for n in res.metrics["notes"] if "cannot be restored" in n]
    assert len(note) == 1 and "does not match this version: KeyError 'host'" in note[0]
    np.testing.assert_array_equal(res.mu, finished[1])


def test_a_saved_config_without_a_newer_field_is_not_other_settings(data, finished, tmp_path):
    """A checkpoint written before a Config field existed: the field counts as its
    default, so an unchanged command resumes; a changed one is still refused."""
    folder = shutil.copytree(finished[0], tmp_path / "checkpoints")
    for step in ("5", "10"):
        _edit_host_item(folder / step, lambda meta: meta["config"].pop("max_retries"))
    res = invert(data, CFG, checkpoint_dir=folder, resume="strict", **RUN)
    assert res.metrics["resumed_from_step"] == 10
    with pytest.raises(CheckpointError, match="max_retries: saved 3, now 4"):
        invert(data, CFG.replace(max_retries=4), checkpoint_dir=folder, resume=True, **RUN)


def test_orbax_noise_goes_to_a_log_in_the_checkpoint_folder(tmp_path, capfd):
    """What orbax reports itself (its absl log records with tracebacks, asyncio's
    "never retrieved" futures, the "Event loop is closed" errors of its callbacks after a
    failed read) goes to OUT/checkpoints/storage.log, not to the terminal."""
    import logging
    import sys
    import types

    from helmholtz_pinn.fit import checkpoints

    folder = tmp_path / "checkpoints"
    checkpoints.Checkpointer(folder, CFG, 1).close()
    capfd.readouterr()
    try:
        raise OSError(28, "No space left on device")
    except OSError:
        logging.getLogger("absl").exception("Save Finalize thread (save_finalize) failed.")
    logging.getLogger("asyncio").error("Future exception was never retrieved")
    closed = RuntimeError("Event loop is closed")
    sys.unraisablehook(types.SimpleNamespace(exc_value=closed, object="a callback"))
    assert capfd.readouterr().err == ""
    log = (folder / checkpoints.LOG).read_text()
    assert "save_finalize" in log and "No space left on device" in log
    assert "never retrieved" in log and "Event loop is closed" in log


def test_a_failed_background_write_raised_again_at_close_is_still_one_line(
    data, tmp_path, monkeypatch
):
    """orbax raises the failed write again when the manager closes: the fit still ends
    with the one OutputError line, and no temporary folder stays."""
    import orbax.checkpoint as ocp

    folder = tmp_path / "checkpoints"

    def full(self, step, *args, **kwargs):
        (Path(self.directory) / f"{step}.orbax-checkpoint-tmp").mkdir(parents=True)
        raise OSError(28, "No space left on device")

    def close(self):
        raise ValueError("RESOURCE_EXHAUSTED: background write failed")

    monkeypatch.setattr(ocp.CheckpointManager, "save", full)
    monkeypatch.setattr(ocp.CheckpointManager, "close", close)
    with pytest.raises(OutputError, match="cannot write checkpoint .*: No space left on device"):
        invert(data, CFG, checkpoint_dir=folder, **RUN)
    assert not list(folder.glob("*.orbax-checkpoint-tmp*"))


def test_periodic_checkpoints_wait_for_the_interval_and_a_resume_continues_the_last(
    data, tmp_path, monkeypatch
):
    """A clock that moves 10 s a block, checkpoints every block but 25 s apart at least:
    a fit stopped after block 6 (by its callback: no final checkpoint) saved block 4 only
    (the first due 25 s after the start); its resume continues from there, waits 25 s
    again from its own start, and saves the last block, 8, which always saves."""
    now, saved, stop_at = [0.0], [], [30]
    save = checkpoints.Checkpointer.save

    def spy(self, state, host):
        saved.append(host.history[-1]["step"])
        save(self, state, host)

    def tick(record):
        now[0] += 10.0
        return record["step"] in stop_at

    monkeypatch.setattr(checkpoints, "MIN_INTERVAL_S", 25.0)
    monkeypatch.setattr(checkpoints.Checkpointer, "clock", staticmethod(lambda: now[0]))
    monkeypatch.setattr(checkpoints.Checkpointer, "save", spy)
    folder, cfg = tmp_path / "checkpoints", CFG.replace(steps=40)  # 5 steps a block
    invert(data, cfg, checkpoint_dir=folder, callback=tick, **RUN)
    assert saved == [20]
    stop_at.clear()
    res = invert(data, cfg, checkpoint_dir=folder, resume=True, callback=tick, **RUN)
    assert res.metrics["resumed_from_step"] == 20 and res.metrics["steps"] == 40
    assert saved == [20, 40]
