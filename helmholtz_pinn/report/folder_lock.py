"""One run per output folder: an advisory lock on ``OUT/.lock``.

The lock is an exclusive ``flock`` on the file, which the kernel releases when the
process ends in any way (exit, exception, SIGKILL), so a lock left by a dead run is
never in force: after a kill the file may stay, its lock does not. A run that ends
deletes the file. The file holds the owner's pid, host and start time (UTC, ISO 8601),
which a refused run names.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
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
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputError(
                f"cannot create output folder {self.folder}: {err.strerror or err}"
            ) from None
        for _ in range(10):  # another run may delete the file between our open and lock
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
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
