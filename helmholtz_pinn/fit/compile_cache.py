"""Persistent compilation cache: compile a training block once per machine, not per run.

A scan block of the seed workload takes 10-20 s to compile on a GPU (mostly matmul
autotuning); with the cache, a later process with the same shapes, flags and JAX version
loads the executable from disk instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from helmholtz_pinn.errors import InputError, OutputError

DEFAULT_DIR = Path("~/.cache/helmholtz_pinn/jax")


def enable_compilation_cache(
    path: str | os.PathLike | None = None,
    min_compile_time_s: float = 0.0,
    min_entry_size_bytes: int = 0,
) -> Path:
    """Turn on JAX's persistent compilation cache in ``path``.

    Every compilation taking at least ``min_compile_time_s`` seconds and at least
    ``min_entry_size_bytes`` bytes is stored (XLA's autotuning results too). Call it
    before the first compilation of the process. A folder that cannot be created or
    written (a read-only HOME) raises :class:`OutputError` and leaves the cache off.

    Args:
      path: the cache folder (created); None: ~/.cache/helmholtz_pinn/jax.
      min_compile_time_s: seconds a compilation must take to be stored (>= 0).
      min_entry_size_bytes: bytes a compiled program must have to be stored.

    Returns:
      The cache folder.

    Raises:
      InputError: ``min_compile_time_s`` is negative.
      OutputError: the folder cannot be created or written.
    """
    import jax  # here: DEFAULT_DIR is read by commands that start no JAX themselves

    if min_compile_time_s < 0:
        raise InputError(f"min_compile_time_s must be >= 0; got {min_compile_time_s!r}")
    directory = Path(path if path is not None else DEFAULT_DIR).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(
            f"cannot create the compile cache folder {directory}: {err.strerror or err}"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"the compile cache folder {directory} is not writable")
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", int(min_entry_size_bytes))
    return directory
