"""PDE forms as plug-ins: one module per residual, found by name.

A form is a :class:`Form`: the derivatives it needs and a residual that reads like its
equation. The training step asks the networks' forward-derivative propagation
(:mod:`helmholtz_pinn.pinn.model`) for exactly those derivatives, packs them into
:class:`Fields` and calls the residual; the loss is mean |r|^2. Adding a form is one
file here (``<name>.py`` defining ``FORM``) plus its test: ``Config(pde="<name>")``,
the command line's ``--pde`` choices and the docs find it by its module name.

All quantities are nondimensional: x' = x / L, mu' = mu / mu_ref, u' = u / s (s the
data's scale per frequency and component), kappa_f = rho omega_f^2 L^2 / mu_ref; a
residual is normalised so that both loss terms are O(1).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, NamedTuple

from helmholtz_pinn.errors import ConfigError

NEEDS = ("grad_u", "lap_u", "hess_u", "grad_mu", "grad_aux")


class Fields(NamedTuple):
    """Fields at N points (nondimensional); None where the form did not ask for them.

    u (N, F, C) complex; grad_u (d, N, F, C); lap_u (N, F, C); hess_u (d, d, N, F, C)
    (symmetric second derivatives d_i d_j u); mu (N, F) complex; grad_mu (d, N, F);
    aux (N, F, A) complex auxiliary fields of the form (e.g. a pressure), grad_aux
    (d, N, F, A). scale (F, C): each component's data scale relative to the largest of
    its frequency (u'_c scale_c is the field in one common unit per frequency; forms that
    couple components need it).
    """

    u: Any
    grad_u: Any
    lap_u: Any
    hess_u: Any
    mu: Any
    grad_mu: Any
    aux: Any = None
    grad_aux: Any = None
    scale: Any = None


@dataclasses.dataclass(frozen=True)
class Form:
    """A residual form.

    Attributes:
      name: the module name, used as ``Config.pde``.
      equation: the equation in physical units (for docs and ``--help``).
      needs: derivatives the residual reads (a subset of :data:`NEEDS`); u and mu are
        always there.
      residual: ``(fields, kappa (F,)) -> r (N, F, C)`` complex, nondimensional.
      aux: complex auxiliary fields per frequency the mu-network also outputs (0: none).
      components: the displacement components the form accepts (None: any).
      transform: ``dataset -> dataset`` applied before fitting (e.g. the curl of the
        measured field), or None; the fit then describes the transformed field.
      vector: the components are the displacement along the grid axes (x, y[, z]), so
        the data need at least as many components as spatial dimensions.
    """

    name: str
    equation: str
    needs: frozenset
    residual: Callable
    aux: int = 0
    components: tuple[int, ...] | None = None
    transform: Callable | None = None
    vector: bool = False

    def __post_init__(self):
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ConfigError(f"form {self.name!r} needs unknown derivatives {sorted(unknown)}")

    def check(self, n_comp: int, ndim: int) -> None:
        """Refuse data the form cannot describe (clear message naming both)."""
        if self.components is not None and n_comp not in self.components:
            raise ConfigError(
                f"pde={self.name!r} needs {' or '.join(map(str, self.components))} "
                f"displacement components; the data have C = {n_comp}"
            )
        if self.vector and n_comp < ndim:
            raise ConfigError(
                f"pde={self.name!r} reads the components as the displacement along the grid "
                f"axes; {ndim}-D data need {ndim} or more components, these have C = {n_comp}"
            )


@functools.cache
def names() -> tuple[str, ...]:
    """Names of the available forms (module names; nothing is imported)."""
    return tuple(
        sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    )


def resolve(name: str, n_comp: int) -> str:
    """The form ``name`` stands for: ``"auto"`` is "navier" for three-component data and
    "hetero" otherwise (docs/defaults.md)."""
    if name != "auto":
        return name
    return "navier" if n_comp == 3 else "hetero"


@functools.cache
def get(name: str) -> Form:
    """The :class:`Form` called ``name``; a clear error for an unknown one."""
    if name not in names():
        raise ConfigError(f"unknown PDE form {name!r}; available: {', '.join(names())}")
    form = importlib.import_module(f"{__name__}.{name}").FORM
    if form.name != name:
        raise RuntimeError(f"forms/{name}.py defines a form named {form.name!r}")
    return form
