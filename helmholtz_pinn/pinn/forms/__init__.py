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

A pointwise form reads the fields at the sampled voxels. A form integrated over patches
(a weak form) declares a :class:`Stencil`: the step then reads the fields at the Q
quadrature points c + h s_q of the patch around every sampled voxel c (the Fields gain a
patch axis, :func:`with_patch_axis`) and the residual integrates them.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from helmholtz_pinn.errors import ConfigError

NEEDS = ("grad_u", "lap_u", "hess_u", "grad_mu", "grad_aux")
# The axis of N (the points) in each field of Fields; the others have it first.
POINT_AXIS = {"grad_u": 1, "grad_mu": 1, "grad_aux": 1, "hess_u": 2}


class Fields(NamedTuple):
    """Fields at N points (nondimensional); None where the form did not ask for them.

    u (N, F, C) complex; grad_u (d, N, F, C); lap_u (N, F, C); hess_u (d, d, N, F, C)
    (symmetric second derivatives d_i d_j u); mu (N, F) complex; grad_mu (d, N, F);
    aux (N, F, A) complex auxiliary fields of the form (e.g. a pressure), grad_aux
    (d, N, F, A). scale (F, C): each component's data scale relative to the largest of
    its frequency (u'_c scale_c is the field in one common unit per frequency; forms that
    couple components need it). For a form with a :class:`Stencil` every field has a
    patch axis Q right after its N axis: u (N, Q, F, C), grad_u (d, N, Q, F, C), mu
    (N, Q, F), ...
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


class Stencil(NamedTuple):
    """Quadrature on the patch c + h s, s in [-1, 1]^d, around a sampled voxel c:
    offsets s_q (Q, d), row 0 the centre (offset 0: the data loss reads u there), and
    weights w_q (Q,), sum 2^d (0 for the centre where it is not a quadrature node), so
    that integral_patch g dx ~ h^d sum_q w_q g(c + h s_q)."""

    offsets: np.ndarray
    weights: np.ndarray


def with_patch_axis(fields: Fields, n: int, q: int) -> Fields:
    """``fields`` at N Q points (point axis N Q, centre-major) with that axis split into
    (N, Q); ``scale`` (per field, no point axis) is kept."""

    def split(name, a):
        if a is None or name == "scale":
            return a
        k = POINT_AXIS.get(name, 0)
        return a.reshape(a.shape[:k] + (n, q) + a.shape[k + 1 :])

    return Fields(**{name: split(name, a) for name, a in fields._asdict().items()})


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
      stencil: ``ndim -> Stencil`` for a form integrated over patches (its residual gets
        Fields with a patch axis), or None (pointwise).
      half_width: ``kappa (F,) -> h``, the patches' half-width (nondimensional), with a
        stencil.
      pde_margin: the band along the field of view's in-plane edges without a PDE
        residual when ``Config.pde_margin`` is None, by the data's dimension, in shortest
        shear wavelengths (a dimension not listed: none).
      spread_max: the largest law spread of a fit that describes the data, a fraction
        (the ``law_consistency`` fit check's limit).
      lbfgs_default: an L-BFGS phase ends a fit by default (``Config.lbfgs_steps`` None,
        :func:`helmholtz_pinn.fit.plan.lbfgs_steps`).
    """

    name: str
    equation: str
    needs: frozenset
    residual: Callable
    aux: int = 0
    components: tuple[int, ...] | None = None
    transform: Callable | None = None
    vector: bool = False
    stencil: Callable | None = None
    half_width: Callable | None = None
    pde_margin: dict[int, float] = dataclasses.field(default_factory=dict)
    spread_max: float = 0.02
    lbfgs_default: bool = False

    def __post_init__(self):
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ConfigError(f"form {self.name!r} needs unknown derivatives {sorted(unknown)}")
        if (self.stencil is None) != (self.half_width is None):
            raise ConfigError(
                f"form {self.name!r} needs both a stencil and a half_width, or neither"
            )

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
