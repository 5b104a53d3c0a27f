"""Internals for studies and benchmarks (``scripts/``): not the public API, may change.

The tools in ``scripts/`` use the public API (``import helmholtz_pinn as hp``) and, for
what a study legitimately needs beyond it (the training step and its parts, the device
plan, the baselines' default widths, the study's file helpers), this module only:
``from helmholtz_pinn import lab``. It names each internal once, so that when one moves
inside the package this table is the only place to follow it
(``tests/scripts/test_imports.py`` checks both rules and that every name resolves).

Names are imported on first use, as the package's own: ``from helmholtz_pinn import
lab`` loads nothing heavy.
"""

from __future__ import annotations

import contextlib
import importlib

_EXPORTS = {
    # the PDE forms and the baselines' defaults
    "pde_forms": ("pinn.forms", "names"),
    "resolve_pde": ("pinn.forms", "resolve"),
    "pde_form": ("pinn.forms", "get"),
    "AHI_SIGMA": "assess.baselines",
    "CURL_SIGMA": "assess.baselines",
    # data: noise and slices as the simulators make them
    "add_noise": "forward.phantoms",
    "shared_noise": "forward.elastic",
    "middle_slice": "forward.elastic",
    # phantoms a study builds (the data-space sweep)
    "four_target": "forward.phantoms",
    "as_springpot": "forward.phantoms",
    "simulate_fd": ("forward.phantoms", "simulate"),
    "ClinicalCase": "forward.clinical",
    "Organ": "forward.clinical",
    "Driver": "forward.clinical",
    "sphere": "forward.clinical",
    "Voigt": "laws.voigt",
    "Springpot": "laws.springpot",
    # the fit's checks and the data's facts, as invert computes them
    "fit_quality": "assess.fit_checks",
    "data_facts": "assess.fit_checks",
    "estimate_wavelength": ("assess.wavelength", "estimate_dataset"),
    "data_defaults": ("fit.defaults", "settings"),
    "data_facts_of": ("fit.defaults", "facts_of"),
    "default_overrides": ("fit.defaults", "overrides"),
    # scores and results beside invert's
    "relative_error_map": "assess.metrics",
    "shown_contrasts": "assess.metrics",
    "baseline_result": "report.result",
    # files
    "prepare_dir": "report.files",
    "write_json": "report.files",
    "jsonable": ("report.files", "_plain"),
    # the network, the step and its scan (benchmarks, scaling)
    "LAP": "pinn.model",
    "VALUE": "pinn.model",
    "apply_jet": "pinn.model",
    "matmul_precision": "pinn.model",
    "Problem": "pinn.train",
    "Spec": "pinn.train",
    "init_state": "pinn.train",
    "loss_terms": "pinn.train",
    "evaluate_fields": "pinn.train",
    "train_step": "pinn.train",
    "block_fn": "pinn.train",
    "set_learning_rate": "pinn.train",
    "stack_trees": "pinn.train",
    "predict": "pinn.predict",
    "prepare": "pinn.problem",
    # second phases: the default L-BFGS and the Gauss-Newton phase measured against it
    # (docs/performance.md, "A Gauss-Newton phase"; not run by invert)
    "lbfgs_fn": "pinn.lbfgs",
    "gauss_newton_fn": "pinn.gauss_newton",
    "residual_vector": "pinn.train",
    # the run plan: a program's key, the prepared problems of a study
    "program": "fit.plan",
    "problems": "fit.plan",
    "prepare_one": "fit.plan",
    # devices: the plan, placement and compiled blocks of a fit
    "plan": "fit.placement",
    "place": "fit.placement",
    "gather": "fit.placement",
    "compile_block": "fit.placement",
    "compiler_options": "fit.placement",
    "initialize_distributed": "fit.placement",
    "bytes_per_voxel": "fit.memory",
    # the command line's parser (docs/cli.md)
    "build_parser": "cli.parser",
}

__all__ = sorted([*_EXPORTS, "network_layout", "stacks_points"])


def __getattr__(name: str):
    from helmholtz_pinn import _lazy_export

    return _lazy_export(_EXPORTS, name, __name__, globals())


def __dir__():
    return sorted([*globals(), *_EXPORTS])


@contextlib.contextmanager
def network_layout(name: str):
    """Force the layout of the u- and mu-networks in the step (``model.apply_pair``):
    "stacked" (one network with a leading axis of 2), "separate", or "auto" (the
    library's choice: stacked up to ``model.STACK_MAX_POINTS`` points). For benchmarks;
    the compiled programs traced inside keep the layout."""
    model = importlib.import_module("helmholtz_pinn.pinn.model")
    saved = model.STACK_MAX_POINTS
    model.STACK_MAX_POINTS = {"auto": saved, "stacked": 1 << 62, "separate": -1}[name]
    try:
        yield
    finally:
        model.STACK_MAX_POINTS = saved


def stacks_points(n: int) -> bool:
    """Whether the library's "auto" layout stacks the two networks at ``n`` points."""
    return n <= importlib.import_module("helmholtz_pinn.pinn.model").STACK_MAX_POINTS
