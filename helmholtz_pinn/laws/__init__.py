"""Viscoelastic laws as plug-ins: one module per law, found by name.

A law says how the complex shear modulus mu (Pa) of tissue depends on the angular
frequency omega = 2 pi f (rad/s). Each module states it as a :class:`Law`:

- its network modulus (JAX, the fit): the mu-network's channels at N points and their
  gradient (d, N, K) -> mu' (N, F) and grad mu' (d, N, F), nondimensional (mu' =
  mu / mu_ref, ``omega_ratio`` = omega_f / omega_max);
- its modulus from parameters (NumPy, the simulators): a NamedTuple of its parameters
  in SI units and f (Hz) -> mu (Pa);
- its parameters read off a fitted modulus, with their units (the clinical outputs);
- how many frequencies it needs, and whether ``mu_model="auto"`` fits it.

Adding a law is one file here (``<name>.py`` defining ``LAW``; an ``_`` of the module
name is a ``-`` of the law's name) plus its test: ``Config(mu_model="<name>")``, the
command line's ``--mu-model`` choices, Spec's frequency check, the simulators and the
clinical outputs find it. A law module imports JAX inside its network function only, so
that the simulators and ``--help`` load none.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from helmholtz_pinn.errors import ConfigError, InputError


class Map(NamedTuple):
    """A parameter map of a fitted law: its ``symbol``, ``unit`` (SI; "1" for none) and
    ``tag``, the unit as it appears in file names."""

    symbol: str
    unit: str
    tag: str


@dataclasses.dataclass(frozen=True)
class Law:
    """A viscoelastic law.

    Attributes:
      name: the module name with ``-`` for ``_``, used as ``Config.mu_model``.
      equation: mu(omega) in physical units (for docs and messages).
      channels: ``n_freq -> K``, the mu-network's outputs for ``n_freq`` frequencies.
      network: ``(value (N, K), grad (d, N, K) or None, omega_ratio (F,)) -> (mu' (N, F),
        grad mu' (d, N, F) or None)`` complex, nondimensional; JAX.
      parameters: the NamedTuple of its parameters in SI units (numbers or arrays that
        broadcast), or None where it has none shared by the frequencies.
      modulus: ``(parameters, f Hz) -> mu`` complex Pa; NumPy; None without parameters.
      valid: ``parameters -> bool``: the parameters describe passive tissue (finite
        values are checked by :func:`modulus`).
      requires: what ``valid`` asks, for messages ("storage > 0 Pa and ...").
      maps: the parameters a fit of this law reports, name -> :class:`Map`.
      read: ``(mu (F, *grid) Pa, omega (F,) rad/s) -> {name: map}`` of :attr:`maps`, read
        off a fitted modulus of this law, or None.
      describe: ``{name: median over the mask} -> str``, what a fit's maps say of the
        tissue (a line for the command line), or None.
      min_frequencies: the fewest frequencies a fit of it needs.
      auto: its place among the laws ``mu_model="auto"`` fits at two or more frequencies
        (0 first; a tie of spreads goes to the earlier); None: auto never fits it.
      spread: its parameters are shared by the frequencies, so a fit of it has a law
        spread (:mod:`helmholtz_pinn.pinn.dispersion`).
    """

    name: str
    equation: str
    channels: Callable[[int], int]
    network: Callable
    parameters: type | None = None
    modulus: Callable | None = None
    valid: Callable | None = None
    requires: str = ""
    maps: dict[str, Map] = dataclasses.field(default_factory=dict)
    read: Callable | None = None
    describe: Callable | None = None
    min_frequencies: int = 1
    auto: int | None = None
    spread: bool = True


@functools.cache
def names() -> tuple[str, ...]:
    """Names of the laws of this folder (module names; nothing is imported)."""
    return tuple(
        sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if m.name[0] != "_")
    )


def register(law: Law) -> None:
    """Make ``law`` available under its name without a module in this folder (a law
    defined elsewhere, e.g. in a test); :func:`unregister` takes it back."""
    _EXTRA[law.name] = law


def unregister(name: str) -> None:
    """Remove a law added by :func:`register`."""
    _EXTRA.pop(name, None)


_EXTRA: dict[str, Law] = {}


def available() -> tuple[str, ...]:
    """Names of every law: this folder's modules and those added by :func:`register`."""
    return tuple(sorted({*names(), *_EXTRA}))


@functools.cache
def _module_law(name: str) -> Law:
    law = importlib.import_module(f"{__name__}.{name.replace('-', '_')}").LAW
    if law.name != name:
        raise RuntimeError(f"laws/{name.replace('-', '_')}.py defines a law named {law.name!r}")
    return law


def get(name: str) -> Law:
    """The :class:`Law` called ``name``; a ConfigError naming the available ones."""
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in names():
        raise ConfigError(f"unknown mu_model {name!r}; available: {', '.join(available())}")
    return _module_law(name)


def auto() -> tuple[str, ...]:
    """The laws ``mu_model="auto"`` fits at two or more frequencies, in order."""
    laws = [get(n) for n in available() if get(n).auto is not None]
    return tuple(law.name for law in sorted(laws, key=lambda law: law.auto))


def with_spread() -> tuple[str, ...]:
    """The laws whose fits have a law spread (parameters shared by the frequencies)."""
    return tuple(n for n in available() if get(n).spread)


def resolve(name: str, n_freq: int) -> str:
    """The law ``name`` fits to data of ``n_freq`` frequencies: ``"auto"`` at one
    frequency is the law without a spread (one frequency shows no dispersion to choose a
    law by); at more it is chosen by :func:`helmholtz_pinn.fit.inversion.invert` and a
    ConfigError here, as is a law that needs more frequencies than the data have."""
    if name == "auto":
        if n_freq > 1:
            raise ConfigError(
                f"mu_model='auto' is chosen from the data by invert() ({n_freq} frequencies); "
                f"a program needs one of {', '.join(available())}"
            )
        (name,) = (n for n in available() if not get(n).spread)
    law = get(name)
    if n_freq < law.min_frequencies:
        fit = [n for n in available() if get(n).min_frequencies <= n_freq]
        raise ConfigError(
            f"mu_model={name!r} has {law.channels(n_freq)} parameters per voxel and needs "
            f"{law.min_frequencies} or more frequencies; the data have {n_freq}: use one of "
            f"{', '.join(fit)}"
        )
    return name


def of(parameters: object) -> Law:
    """The law whose parameters ``parameters`` are (by their type)."""
    for name in available():
        law = get(name)
        if law.parameters is not None and type(parameters) is law.parameters:
            return law
    kinds = [get(n).parameters.__name__ for n in available() if get(n).parameters is not None]
    raise InputError(f"law must be one of {', '.join(kinds)}; got {parameters!r}")


def check(parameters: object, name: str = "law") -> Law:
    """The law of ``parameters``; an InputError quoting them unless they are finite and
    valid (:attr:`Law.valid`). ``name`` names them in the message."""
    try:
        law = of(parameters)
    except InputError:
        raise InputError(f"{name} must be the parameters of a law; got {parameters!r}") from None
    finite = all(np.isfinite(np.asarray(v, float)).all() for v in parameters)
    if not (finite and law.valid(parameters)):
        raise InputError(f"{name} needs {law.requires}; got {parameters!r}")
    return law


def modulus(parameters: object, frequency: float | np.ndarray) -> complex | np.ndarray:
    """Complex shear modulus mu (Pa) of a law's ``parameters`` (:func:`check`) at
    ``frequency`` (Hz, > 0; a number, or an array that broadcasts with the parameters)."""
    law = check(parameters)
    f = np.asarray(frequency, float)
    if not (np.isfinite(f).all() and (f > 0).all()):
        raise InputError(f"frequency must be > 0 Hz; got {f.tolist()!r}")
    mu = law.modulus(parameters, f)
    return complex(mu) if np.ndim(mu) == 0 else mu
