"""One run per output folder: an advisory lock on ``OUT/.lock``.

The lock is an exclusive ``flock`` on the file, which the kernel releases when the
process ends in any way (exit, exception, SIGKILL), so a lock left by a dead run is
never in force: after a kill the file may stay, its lock does not. A run that ends
deletes the file. The file holds the owner's pid, host and start time (UTC, ISO 8601),
which a refused run names.

An output folder and everything under it belong to one run: a run into ``OUT`` is also
refused while another holds a folder above ``OUT`` (a batch writing ``OUT/..``) or one
inside it (``OUT/sub``), since each writes, finishes or clears result files there.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import time
from pathlib import Path

from helmholtz_pinn.errors import OutputError

LOCK_NAME = ".lock"


class FolderLock:
    """``with FolderLock(out): ...`` holds ``out`` for this process; a second holder is
    refused with :class:`OutputError` naming the process that holds it."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): the folder is not locked
            return
        created = not self.folder.exists()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputError(
                f"cannot create output folder {self.folder}: {err.strerror or err}"
            ) from None
        for _ in range(10):  # another run may delete the file between our open and lock
            fd = self._open()
            if not _lock(fd, fcntl.LOCK_EX):
                owner = _describe(os.read(fd, 4096))
                os.close(fd)
                raise OutputError(
                    f"{self.folder} is in use by {owner}: wait for that run to finish or "
                    "choose another output folder"
                ) from None
            if _same_file(fd, self.path):
                break
            os.close(fd)
        else:
            raise OutputError(f"cannot lock {self.path}: it keeps being replaced")
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(_owner()).encode())
        os.fsync(fd)
        self._fd = fd
        try:
            self._refuse_nested()
        except BaseException:
            self.release()
            if created and not any(self.folder.iterdir()):  # leave no trace in theirs
                self.folder.rmdir()
            raise

    def _refuse_nested(self) -> None:
        """Refuse (:class:`OutputError`) while another run holds a folder above this one
        or inside it. Checked once this folder is held, so of two runs started together
        into nested folders at least one sees the other."""
        here = self.folder.resolve()
        above = [p / LOCK_NAME for p in here.parents]
        below = [
            Path(root) / LOCK_NAME
            for root, _, names in os.walk(here)
            if LOCK_NAME in names and Path(root) != here
        ]
        for path in above + below:
            owner = _holder(path)
            if owner is None:
                continue
            where = path.parent
            if path in above:
                why = f"{self.folder} is inside {where}, which is in use by {owner}"
            else:
                why = f"{self.folder} holds {where}, which is in use by {owner}"
            raise OutputError(
                f"{why}: an output folder and everything in it belong to one run; wait for "
                "that run to finish or choose a folder outside it"
            )

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise OutputError(
                f"output folder {self.folder} is not writable ({self.path}: {err.strerror or err})"
            ) from None

    def release(self) -> None:
        """Delete the lock file, then close it (which releases the flock): the folder
        holds no trace of the run's lock."""
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def _lock(fd: int, how: int) -> bool:
    """``flock(fd, how)`` without blocking, retried for 0.2 s (another run's
    :func:`_holder` holds a lock for a moment); whether it was taken."""
    import fcntl

    for attempt in range(5):
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except OSError:
            if attempt < 4:
                time.sleep(0.05)
    return False


def _holder(path: Path) -> str | None:
    """Who holds the lock file ``path`` (as :func:`_describe` says), or None when no
    process does (no file, or one a finished or killed run left)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _describe(os.read(fd, 4096))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not deleted or replaced)."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _owner() -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _describe(raw: bytes) -> str:
    try:
        owner = json.loads(raw.decode())
        return f"process {owner['pid']} on {owner['host']} (since {owner['started']})"
    except (ValueError, KeyError, TypeError):
        return "another process"
