"""Every error the package raises on purpose, in one hierarchy.

    HelmholtzPinnError               base: catch this to handle any known failure
    +-- InputError (ValueError)      bad input at the API boundary: names the value and
    |   |                            what was expected
    |   +-- ConfigError              a Config field or a run option
    |   +-- DatasetError             a dataset file or array
    |   +-- DeviceMemoryError        the problem does not fit the device(s), or its
    |                                results the host's memory
    +-- CheckpointError              a checkpoint cannot be used to resume this run
    +-- OutputError (OSError)        the output folder cannot be created or written
    +-- MissingDependencyError (ImportError)   an optional package is not installed
    +-- DivergenceError (RuntimeError)         training diverged; roll-backs did not help
    +-- Interrupted                  SIGINT (Ctrl-C) or SIGTERM stopped a fit after its
                                     current block

The command line prints any of them as one line and exits with status 2 (3 for a
divergence; 130 after SIGINT and 143 after SIGTERM, as a shell reports a process those
signals ended); anything else is a bug and shows its traceback.
"""

from __future__ import annotations


class HelmholtzPinnError(Exception):
    """Base of the package's own errors."""


class InputError(HelmholtzPinnError, ValueError):
    """Bad input: the message quotes the value and says what was expected."""


class ConfigError(InputError):
    """A configuration field or run option is invalid."""


class DatasetError(InputError):
    """A dataset file or array is invalid; the message names the field and the fix."""


class DeviceMemoryError(InputError):
    """A problem's arrays do not fit in device memory, or the results of a fit (maps on
    the full grid) in the host's (:func:`helmholtz_pinn.fit.admission.check_results_fit`)."""


class CheckpointError(HelmholtzPinnError):
    """A checkpoint cannot be used to resume this run."""


class OutputError(HelmholtzPinnError, OSError):
    """The output folder cannot be created or written."""


class MissingDependencyError(HelmholtzPinnError, ImportError):
    """An optional package needed for this feature is not installed."""


class DivergenceError(HelmholtzPinnError, RuntimeError):
    """Training diverged and the roll-backs did not recover it."""


class Interrupted(HelmholtzPinnError):
    """SIGINT (Ctrl-C) or SIGTERM stopped a fit after its current block. Raised by the
    host loop with the last good ``state`` and ``host`` loop state attached (the fit
    writes them as a final checkpoint when it has a folder, then raises again with its
    path). ``signal_name`` is "SIGINT" or "SIGTERM"; ``exit_status`` is 128 plus the
    signal's number (130, 143)."""

    def __init__(self, message: str, state=None, host=None, *, signal_name: str = "SIGINT"):
        super().__init__(message)
        self.state, self.host, self.signal_name = state, host, signal_name

    @property
    def exit_status(self) -> int:
        return {"SIGINT": 130, "SIGTERM": 143}.get(self.signal_name, 130)


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first caller outside this package (the user's
    line that called ``invert``, not a line of the library)."""
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.abspath(__file__))
    level, frame = 2, sys._getframe(1)  # stacklevel 2: the caller of warn
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
