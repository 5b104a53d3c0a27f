"""One run per output folder: a second holder is refused with the holder's pid; a lock
left by a killed process is not in force."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helmholtz_pinn.errors import OutputError
from helmholtz_pinn.report.folder_lock import LOCK_NAME, FolderLock

HOLD = textwrap.dedent(
    """
    import sys, time
    from helmholtz_pinn.report.folder_lock import FolderLock
    with FolderLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(60)
    """
)


def _holder(folder):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_is_refused_with_the_holders_pid(tmp_path):
    proc = _holder(tmp_path)
    try:
        with pytest.raises(OutputError, match=f"in use by process {proc.pid} on "):
            FolderLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holders_lock_is_not_in_force(tmp_path):
    proc = _holder(tmp_path)
    proc.kill()  # SIGKILL: no clean-up ran; the lock file stays
    proc.wait()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == proc.pid
    with FolderLock(tmp_path):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_the_lock_is_released_on_exit_and_on_an_exception(tmp_path):
    with pytest.raises(RuntimeError), FolderLock(tmp_path):
        raise RuntimeError("a failed run")
    with FolderLock(tmp_path):
        pass
