"""Strict test settings: fixed seeds, rank promotion raises, highest matmul precision.

The suite runs on the CPU with 4 forced host devices (the multi-device tests need them):
the flag is added to any ``XLA_FLAGS`` already set, and ``JAX_PLATFORMS=cpu`` keeps a
GPU machine on the same path.
"""

import os

_FORCE = "--xla_force_host_platform_device_count=4"
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FORCE}".strip()
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_default_matmul_precision", "highest")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def four_devices():
    """The 4 forced host devices; a clear failure (not a skip) if they are missing."""
    devices = jax.devices()
    assert len(devices) == 4, f"expected 4 forced CPU devices, got {devices} (XLA_FLAGS?)"
    return devices
