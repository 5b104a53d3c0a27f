"""Command line: ``helmholtz-pinn simulate | invert | baseline | convert``.

The parser only maps arguments onto library calls (``invert`` is
:func:`helmholtz_pinn.inversion.invert` and nothing else); the inversion options are
generated from the fields of :class:`helmholtz_pinn.config.Config` and their
documentation (one list of defaults and meanings). The package's own errors
(:mod:`helmholtz_pinn.errors`) print one line and exit with status 2, a divergence with
status 3 (``--debug`` shows the traceback). JAX is imported only by the commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import typing
from pathlib import Path

from helmholtz_pinn.config import Config, field_help

EXIT_USAGE = 2
EXIT_DIVERGED = 3


def _config_options(parser: argparse.ArgumentParser) -> None:
    """One ``--field-name`` option per Config field, typed from its default, its help the
    field's documentation."""
    from helmholtz_pinn import forms

    group = parser.add_argument_group("inversion settings (helmholtz_pinn.Config)")
    hints = typing.get_type_hints(Config)
    meaning = field_help()
    for field in dataclasses.fields(Config):
        if field.name == "seed":
            continue
        flag = "--" + field.name.replace("_", "-")
        hint = hints[field.name]
        choices = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
        if field.name == "pde":
            choices = forms.names()
        kind = type(field.default) if field.default is not None else float
        group.add_argument(
            flag,
            dest=field.name,
            type=str if choices else kind,
            default=None,
            choices=choices,
            help=f"{meaning.get(field.name, '')} (default: {field.default})".replace("%", "%%"),
        )


def _config_from(args: argparse.Namespace) -> Config:
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(Config)
        if getattr(args, f.name, None) is not None
    }
    return Config().replace(**overrides)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="helmholtz-pinn",
        description="PINN inversion of MR elastography wave fields for the shear modulus (Pa).",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="write a phantom dataset (.npz) from the forward solver")
    sim.add_argument("--phantom", default="four-target", help="built-in phantom name")
    sim.add_argument("--out", required=True, type=Path, help="output .npz file")
    sim.add_argument(
        "--noise-db",
        type=float,
        default=None,
        help="noise power relative to signal power, dB (e.g. -20 = 1 %%)",
    )
    sim.add_argument("--seed", type=int, default=0, help="noise seed")
    sim.add_argument("--frequencies", type=float, nargs="+", help="Hz (default 60 80 100)")
    sim.add_argument("--components", type=int, help="drive directions (default 2)")

    inv = sub.add_parser("invert", help="fit the PINN; write mu.npz (Pa), metrics.json, figures")
    inv.add_argument(
        "data",
        nargs="*",
        type=Path,
        help="dataset .npz (default: the built-in four-target phantom); several "
        "files of one grid are fitted as one batched program, each written "
        "to OUT/<file stem>/",
    )
    inv.add_argument(
        "--slicewise",
        action="store_true",
        help="fit every z-slice of a 3-D dataset with its own 2-D PINN, all "
        "slices batched; slices with an empty mask are left NaN",
    )
    inv.add_argument(
        "--devices",
        type=_devices_arg,
        default="all",
        metavar="N|all",
        help="devices to use: N, or all (default: every visible device when "
        "the work splits - at least as many slices, files or ensemble "
        "members as devices, or a large problem - else one)",
    )
    inv.add_argument("--out", type=Path, default=Path("out"), help="output folder")
    inv.add_argument(
        "--seed", type=int, default=0, help="seed of the network initialisation and sampling"
    )
    inv.add_argument("--no-progress", action="store_true", help="no progress bar")
    inv.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in OUT/checkpoints",
    )
    inv.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="do not write checkpoints into OUT/checkpoints",
    )
    inv.add_argument(
        "--tensorboard",
        type=Path,
        metavar="DIR",
        help="also write TensorBoard event files into DIR (needs tensorboardX)",
    )
    inv.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="persistent compilation cache (default ~/.cache/helmholtz_pinn/jax)",
    )
    _config_options(inv)

    base = sub.add_parser("baseline", help="classical algebraic Helmholtz inversion (AHI)")
    base.add_argument("data", type=Path, help="dataset .npz")
    base.add_argument("--method", default="ahi", choices=["ahi"], help="inversion method")
    base.add_argument(
        "--smoothing",
        default="none",
        choices=["none", "gaussian", "savgol"],
        help="smoothing of u before the finite-difference Laplacian",
    )
    base.add_argument("--sigma", type=float, default=1.0, help="Gaussian width, voxels")
    base.add_argument("--window", type=int, default=7, help="Savitzky-Golay window, voxels")
    base.add_argument("--out", type=Path, required=True, help="output folder")

    conv = sub.add_parser("convert", help="MAT (v5/v7.3) or NIfTI wave images -> dataset .npz")
    conv.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help=".mat/.h5 file, or NIfTI file(s): one complex or a re/im or mag/phase pair",
    )
    conv.add_argument("--out", required=True, type=Path, help="output .npz file")
    conv.add_argument(
        "--kind", default="auto", choices=["auto", "mat", "nifti", "nifti-complex", "nifti-polar"]
    )
    conv.add_argument("--variable", help="MAT variable holding the wave field")
    conv.add_argument(
        "--axes",
        help="axis layout of the array, letters x y z c f t (and - "
        "for a length-1 axis), e.g. xyzcf or xyzt",
    )
    conv.add_argument("--frequency", type=float, nargs="+", help="drive frequencies, Hz")
    conv.add_argument("--spacing", type=float, nargs="+", help="voxel size per axis")
    conv.add_argument(
        "--spacing-unit",
        default="m",
        choices=["m", "mm"],
        help="unit of --spacing and of spacing read from MAT files",
    )
    return parser


def _devices_arg(text: str) -> int | str:
    if text == "all":
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer or 'all'; got {text!r}")


def _result_dirs(out: Path, paths: list[Path]) -> list[Path]:
    """OUT/<stem> per input file; the index is prefixed when stems repeat."""
    stems = [p.name.removesuffix(".npz") for p in paths]
    if len(set(stems)) < len(stems):
        stems = [f"{i}_{s}" for i, s in enumerate(stems)]
    return [out / s for s in stems]


def _load_or_phantom(path: Path | None, out: Path):
    from helmholtz_pinn import data, phantoms

    if path is not None:
        return data.load(path)
    print("no DATA given: simulating the built-in four-target phantom", file=sys.stderr)
    dataset = phantoms.simulate_phantom("four-target")
    out.mkdir(parents=True, exist_ok=True)
    data.save(dataset, out / "phantom.npz")
    return dataset


def _write_dataset(dataset, out: Path) -> None:
    """Save a dataset .npz (creating its folder) and say what was written."""
    from helmholtz_pinn import data, outputs

    outputs.prepare_dir(out.parent)
    data.save(dataset, out)
    print(
        f"wrote {out}: u {dataset.u.shape}, frequencies {list(dataset.frequency)} Hz, "
        f"spacing {list(dataset.spacing)} m"
    )


def cmd_simulate(args) -> int:
    from helmholtz_pinn import phantoms

    dataset = phantoms.simulate_phantom(
        args.phantom,
        noise_db=args.noise_db,
        seed=args.seed,
        frequencies=args.frequencies,
        components=args.components,
    )
    _write_dataset(dataset, args.out)
    return 0


def cmd_invert(args) -> int:
    from helmholtz_pinn import inversion, layout, logs, outputs
    from helmholtz_pinn.compile_cache import enable_compilation_cache
    from helmholtz_pinn.errors import ConfigError, DivergenceError

    layout.initialize_distributed()  # multi-host launch (docs/scaling.md); else a no-op
    cfg = _config_from(args).replace(seed=args.seed)
    paths = args.data or [None]
    if args.slicewise and len(paths) != 1:
        raise ConfigError(f"--slicewise takes one 3-D DATA file; got {len(paths)}")
    datasets = [_load_or_phantom(p, args.out) for p in paths]
    outputs.prepare_dir(args.out)
    enable_compilation_cache(args.cache_dir)
    board = logs.TensorBoardLogger(args.tensorboard) if args.tensorboard else None
    try:
        results = inversion.invert(
            datasets[0] if len(datasets) == 1 else datasets,
            cfg,
            slicewise=args.slicewise,
            devices=args.devices,
            progress=not args.no_progress,
            callback=board,
            checkpoint_dir=None if args.no_checkpoints else args.out / "checkpoints",
            resume=args.resume,
        )
        if board is not None:
            for result in results if isinstance(results, list) else [results]:
                board.log_result(result)
    except DivergenceError as err:
        outputs.write_json(args.out / "failure.json", {"error": str(err)})
        print(f"error: {err} (no result written; see {args.out / 'failure.json'})", file=sys.stderr)
        return EXIT_DIVERGED
    finally:
        if board is not None:
            board.close()
    if isinstance(results, list):
        dirs = _result_dirs(args.out, paths)
    else:
        results, dirs = [results], [args.out]
    import jax

    if jax.process_index() == 0:  # one writer when several hosts run the same program
        for result, out in zip(results, dirs, strict=True):
            result.save(out)
            _summary(result.metrics, out)
    return 0


def cmd_baseline(args) -> int:
    from helmholtz_pinn import baselines, data, outputs
    from helmholtz_pinn.result import make_result

    dataset = data.load(args.data)
    t0 = time.perf_counter()
    mu = baselines.ahi(dataset, smoothing=args.smoothing, sigma=args.sigma, window=args.window)
    settings = {
        "method": args.method,
        "smoothing": args.smoothing,
        "sigma_voxels": args.sigma,
        "window_voxels": args.window,
    }
    facts = {"method": f"ahi/{args.smoothing}", "wall_time_s": time.perf_counter() - t0, **settings}
    result = make_result(dataset, settings, mu[None], dataset.u, facts)
    outputs.prepare_dir(args.out)
    result.save(args.out)
    _summary(result.metrics, args.out)
    return 0


def _summary(facts: dict, out: Path) -> None:
    keys = ("steps", "wall_time_s", "median_rel_error_storage", "pearson_r_storage")
    shown = ", ".join(f"{k}={facts[k]:.4g}" for k in keys if isinstance(facts.get(k), float))
    print(f"wrote {out}/: mu.npz (Pa), metrics.json, figures. {shown}")


def cmd_convert(args) -> int:
    from helmholtz_pinn.scanner import convert

    dataset = convert(
        args.inputs,
        kind=args.kind,
        variable=args.variable,
        axes=args.axes,
        frequency=args.frequency,
        spacing=args.spacing,
        spacing_unit=args.spacing_unit,
    )
    _write_dataset(dataset, args.out)
    return 0


COMMANDS = {
    "simulate": cmd_simulate,
    "invert": cmd_invert,
    "baseline": cmd_baseline,
    "convert": cmd_convert,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from helmholtz_pinn.errors import HelmholtzPinnError

    try:
        return COMMANDS[args.command](args)
    except HelmholtzPinnError as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
