"""An output folder and everything under it belong to one run: a run into a folder
inside one that another run holds, or around one, is refused with one line naming the
holder, and a command into OUT never touches the stage of a live run into OUT/sub."""

import subprocess
import sys
import textwrap

import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.cli.commands import main
from helmholtz_pinn.errors import OutputError
from helmholtz_pinn.io import dataset as data
from helmholtz_pinn.report import files
from helmholtz_pinn.report.folder_lock import FolderLock

HOLD = textwrap.dedent(
    """
    import sys, time
    from helmholtz_pinn.report.folder_lock import FolderLock
    with FolderLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(60)
    """
)


@pytest.fixture
def holder():
    procs = []

    def hold(folder):
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield hold
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_folder_inside_a_held_one_is_refused(tmp_path, holder):
    proc = holder(tmp_path / "n3")
    with pytest.raises(OutputError) as err:
        FolderLock(tmp_path / "n3" / "small").acquire()
    assert str(err.value).startswith(
        f"{tmp_path / 'n3' / 'small'} is inside {tmp_path / 'n3'}, which is in use by "
        f"process {proc.pid} on "
    )
    assert not (tmp_path / "n3" / "small").exists()  # no trace left in the other's folder


def test_a_folder_around_a_held_one_is_refused(tmp_path, holder):
    proc = holder(tmp_path / "n3" / "small")
    with pytest.raises(OutputError, match=f"holds .*small, which is in use by process {proc.pid}"):
        FolderLock(tmp_path / "n3").acquire()
    with FolderLock(tmp_path / "other"):  # a folder beside it is free
        pass


def test_a_command_into_out_leaves_a_live_runs_stage_below_it(tmp_path, holder, capsys):
    """A run into OUT/sub is writing its result (OUT/sub/.writing, no marker yet): a
    baseline into OUT is refused with one line and does not delete that stage."""
    data.save(plane_wave_dataset(n=12), tmp_path / "d.npz")
    out, sub = tmp_path / "out", tmp_path / "out" / "sub"
    stage = sub / files.STAGE
    stage.mkdir(parents=True)
    (stage / "mu.npz").write_bytes(b"being written")
    holder(sub)
    assert main(["baseline", str(tmp_path / "d.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"holds {sub}, which is in use by process" in err
    assert (stage / "mu.npz").read_bytes() == b"being written"
