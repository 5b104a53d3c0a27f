"""The ``simulate --physics elastic`` options of the command line: the parser's options
of :func:`helmholtz_pinn.forward.elastic.simulate_elastic` (its defaults in the help's (); an
option not given, None, leaves that default) and the call itself. The FEM module is
imported only when the command runs, so ``--help`` stays light."""

from __future__ import annotations

import argparse
import sys

from helmholtz_pinn.errors import ConfigError


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0; got {text!r}")
    return value


OPTIONS = {
    "layout": dict(choices=("four-target", "two-ellipse"), help="inclusions (four-target)"),
    "output": dict(choices=("volume", "slice"), help="volume or middle z-slice (volume)"),
    "shape": dict(type=int, nargs=3, metavar=("NX", "NY", "NZ"), help="voxels (80 100 10)"),
    "spacing": dict(type=_positive, nargs="+", metavar="M", help="voxel size, m (1e-3)"),
    "background": dict(type=_positive, metavar="PA", help="background G', Pa (3000)"),
    "lam": dict(type=_positive, metavar="PA", help="Lame lambda, Pa (1e6)"),
    "drive": dict(type=float, nargs=3, metavar=("UX", "UY", "UZ"), help="amplitudes (1 0.3 0.1)"),
    "faces": dict(choices=("free", "absorbing"), help="faces x = 0, Lx and y = Ly (free)"),
    "z_faces": dict(choices=("free", "absorbing", "sliding"), help="faces z = 0, Lz (free)"),
    "mesh_size": dict(type=_positive, metavar="M", help="element size, m (wavelength/epw)"),
    "elements_per_wavelength": dict(
        type=_positive, metavar="N", help="epw: per shear wavelength (8)"
    ),
}


def add_options(parser: argparse.ArgumentParser) -> None:
    """The --physics elastic option group of ``parser`` (the simulate sub-command)."""
    group = parser.add_argument_group(
        "--physics elastic (helmholtz_pinn.forward.elastic.simulate_elastic; its defaults in ())",
        "The y = 0 face moves rigidly by --drive (x, y, z; the unit of u); the mesh size "
        "defaults to the background's shear wavelength at the highest frequency / epw.",
    )
    for name, options in OPTIONS.items():
        group.add_argument("--" + name.replace("_", "-"), default=None, **options)


def given(args) -> dict:
    """The elastic options given in ``args`` ({name: value}); an option of the other
    physics (elastic under scalar, ``--phantom`` or ``--components`` under elastic) is a
    :class:`ConfigError`."""
    options = {k: getattr(args, k) for k in OPTIONS if getattr(args, k) is not None}
    scalar = [f for f in ("--phantom", "--components", "--nz") if getattr(args, f[2:]) is not None]
    if args.physics == "scalar" and options:
        flags = ", ".join("--" + k.replace("_", "-") for k in options)
        raise ConfigError(f"{flags} apply to --physics elastic only")
    if args.physics == "elastic" and scalar:
        raise ConfigError(
            f"{', '.join(scalar)} apply to --physics scalar only; the elastic phantom has 3 "
            "components and its geometry is --layout"
        )
    return options


def simulate(args, options: dict):
    """The elastic phantom of the parsed ``args`` and the given ``options`` (a Dataset)."""
    from helmholtz_pinn.forward import elastic

    if {"mesh_size", "elements_per_wavelength"} <= options.keys():
        raise ConfigError("give --mesh-size or --elements-per-wavelength, not both")
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    if args.frequencies:
        kwargs["frequencies"] = args.frequencies
    print("solving the elastic phantom by finite elements ...", file=sys.stderr)
    try:
        return elastic.simulate_elastic(noise_db=args.noise_db, seed=args.seed, **kwargs)
    except ValueError as err:  # simulate_elastic's argument checks raise plain ValueErrors
        raise ConfigError(f"--physics elastic: {err}") from None
