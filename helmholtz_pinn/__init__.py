"""helmholtz_pinn: physics-informed inversion of MR elastography wave fields.

>>> import helmholtz_pinn as hp
>>> data = hp.simulate("four-target", noise_db=-20)   # or hp.load("scan.npz")
>>> result = hp.invert(data, steps=4000)             # result.mu: complex Pa
>>> result.save("out")

The public names below are imported on first use, so ``import helmholtz_pinn`` (and the
command line's ``--help``) does not load JAX.
"""

from __future__ import annotations

import importlib

# The data flow: a module imports only modules listed before it (tests/test_layout.py).
MODULES = (
    "errors",
    "config",
    "validation",
    "data",
    "stencils",
    "readers",
    "masks",
    "presets",
    "scanner",
    "scalar_fd",
    "phantoms",
    "fem_solve",
    "elastic",
    "model",
    "physics",
    "forms",
    "train",
    "loop",
    "checkpoint",
    "memory",
    "layout",
    "metrics",
    "quality",
    "clinical",
    "baselines",
    "plausibility",
    "outputs",
    "maps",
    "figures",
    "result",
    "problem",
    "fitting",
    "inversion",
    "logs",
    "compile_cache",
    "elastic_cli",
    "cli_args",
    "cli",
)

_EXPORTS = {
    "Config": "config",
    "Dataset": "data",
    "load": "data",
    "example": "data",
    "save": "data",
    "convert": "scanner",
    "PHANTOMS": "phantoms",
    "make_phantom": "phantoms",
    "simulate_phantom": "phantoms",
    "simulate": ("phantoms", "simulate_phantom"),
    "Result": "result",
    "invert": "inversion",
    "evaluate": "metrics",
    "baseline": ("baselines", "ahi"),
    "curl_mdev": "baselines",
    "simulate_elastic": "elastic",
    "enable_compilation_cache": "compile_cache",
    "FitQualityWarning": "quality",
    "HelmholtzPinnError": "errors",
    "InputError": "errors",
    "ConfigError": "errors",
    "DatasetError": "errors",
    "DeviceMemoryError": "errors",
    "CheckpointError": "errors",
    "OutputError": "errors",
    "DivergenceError": "errors",
    "Interrupted": "errors",
}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'helmholtz_pinn' has no attribute {name!r}")
    module, attr = (target, name) if isinstance(target, str) else target
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_EXPORTS])
