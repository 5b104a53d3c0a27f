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

# The layers, in import order: a subpackage imports only the modules and subpackages listed
# before it (tests/test_architecture.py). The data flow a user sees is io -> forward ->
# pinn -> fit -> assess -> report -> cli; assess stands below pinn and fit because the
# classical numerics it holds (stencils, AHI, metrics, checks) need no network, and the
# PINN uses them (the noise level, the reference modulus, the fit's checks). The
# viscoelastic laws stand below everything that reads them: the Config, the simulators,
# the clinical outputs and the network. ``lab``, the internals that scripts/ may use, stands
# above them all; nothing in the package uses it.
LAYERS = (
    "errors",
    "laws",
    "config",
    "io",
    "forward",
    "assess",
    "pinn",
    "report",
    "fit",
    "cli",
    "lab",
)

_EXPORTS = {
    "Config": "config",
    "cpu_settings": "config",
    "Dataset": "io.dataset",
    "load": "io.dataset",
    "example": "io.dataset",
    "save": "io.dataset",
    "convert": "io.convert",
    "PHANTOMS": "forward.phantoms",
    "make_phantom": "forward.phantoms",
    "simulate_phantom": "forward.phantoms",
    "simulate": ("forward.phantoms", "simulate_phantom"),
    "Result": "report.result",
    "invert": "fit.inversion",
    "run_cohort": "fit.cohort",
    "evaluate": "assess.metrics",
    "baseline": ("assess.baselines", "ahi"),
    "curl_mdev": "assess.baselines",
    "simulate_elastic": "forward.elastic",
    "simulate_clinical": "forward.clinical",
    "CLINICAL_FAMILY": ("forward.clinical", "FAMILY"),
    "enable_compilation_cache": "fit.compile_cache",
    "FitQualityWarning": "assess.fit_checks",
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


def _lazy_export(exports: dict, name: str, owner: str, namespace: dict):
    """The object ``exports`` names ``name`` (a module of this package, or a pair (module,
    attribute)), imported on first use and cached in ``namespace``: the lazy attributes of
    this package and of ``helmholtz_pinn.lab`` (``owner``, for the AttributeError)."""
    target = exports.get(name)
    if target is None:
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")
    module, attr = (target, name) if isinstance(target, str) else target
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    namespace[name] = value
    return value


def __getattr__(name: str):
    return _lazy_export(_EXPORTS, name, __name__, globals())


def __dir__():
    return sorted([*globals(), *_EXPORTS])
