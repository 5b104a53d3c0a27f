"""Compiling a law's programs ahead: a fit that follows ``chunks.compile_ahead`` compiles
none of its programs itself (JAX's backend-compile events are counted while it trains)."""

import jax.monitoring as monitoring
import numpy as np
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import chunks
from helmholtz_pinn.fit.admission import admitted
from helmholtz_pinn.fit.plan import plans
from helmholtz_pinn.fit.training import train
from helmholtz_pinn.pinn import forms

COMPILED = "/jax/core/compile/backend_compile_duration"


def _given_and_plans(cfg: Config):
    """The tiny plane-wave input and its plans (one per law where ``cfg`` asks for auto)."""
    given = admitted(plane_wave_dataset(n=12), slicewise=False, force=False, drop=False,
                     metric_margin=0)  # fmt: skip
    form = forms.get(forms.resolve(cfg.pde, given.datasets[0].n_comp))
    return given, plans(given.datasets, cfg, form=form, devices=1, backend="cpu")


def _train_counting(given, plan):
    """(the trained fit, how many programs JAX's backend compiled while it trained)."""
    compiled = []

    def count(name, seconds, **kwargs):
        if name == COMPILED:
            compiled.append(seconds)

    monitoring.register_event_duration_secs_listener(count)
    try:
        trained = train(given, plan, callback=None, progress=False)
    finally:
        monitoring.unregister_event_duration_listener(count)
    return trained, len(compiled)


def _fit(cfg: Config, ahead: bool):
    given, laws = _given_and_plans(cfg)
    plan = laws[-1]  # the second law
    if ahead:
        chunks.compile_ahead(given.datasets, plan).result()
    return _train_counting(given, plan)


def test_a_fit_after_its_programs_compiled_ahead_compiles_none_of_them():
    cfg = Config(**{**SMALL, "steps": 10, "lbfgs_steps": 2, "lbfgs_from": 5})
    _, compiled = _fit(cfg.replace(width=10), ahead=False)  # a spec no other test compiles
    assert compiled > 0  # the count sees a fit's own compiles
    ahead, compiled = _fit(cfg.replace(width=12), ahead=True)
    assert compiled == 0
    assert ahead.fitted.facts["lbfgs"]["steps"] == 2  # the phase's program was among them
    assert np.isfinite(ahead.fitted.maps[0][0]).all()


def test_a_compile_ahead_after_the_next_block_starts_once_a_fit_has_compiled_its_block():
    """The second law's compile waits for the first law's Adam block (so that the GEMM
    autotuning of that block has the GPU alone), then the second fit compiles nothing."""
    cfg = Config(**{**SMALL, "steps": 10, "lbfgs_steps": 2, "lbfgs_from": 5, "width": 14,
                    "mu_model": "auto"})  # fmt: skip
    given, (first, second) = _given_and_plans(cfg)
    ready = chunks.after_next_block()
    ahead = chunks.compile_ahead(given.datasets, second, after=ready)
    assert not ready.is_set()
    train(given, first, callback=None, progress=False)
    assert ready.is_set()  # the first fit's block released it
    ahead.result()
    _, compiled = _train_counting(given, second)
    assert compiled == 0
