"""The command line's parser: ``helmholtz-pinn simulate | invert | baseline | convert |
cohort``.

The inversion options are generated from the fields of ``helmholtz_pinn.config.Config`` and
their documentation (one list of defaults and meanings), grouped as data, model, physics,
training, output and parallel options. Abbreviations are off; a usage
error prints the (sub)command's one-line usage and one line ``PROG: error: ...`` naming the
near miss of a mistyped option or choice, and exits 2. Imports no JAX.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import re
import sys
import typing
from pathlib import Path

from helmholtz_pinn.config import Config, cpu_settings, field_help
from helmholtz_pinn.io.readers import KINDS

EXIT_USAGE = 2
EXIT_DIVERGED = 3


def _near(word: str, candidates) -> str | None:
    """The candidate closest to a mistyped ``word`` (dashes and ``=value`` ignored)."""
    bare = {c.lstrip("-"): c for c in candidates}
    match = difflib.get_close_matches(word.split("=")[0].lstrip("-"), bare, n=1, cutoff=0.7)
    return bare[match[0]] if match else None


class _Parser(argparse.ArgumentParser):
    """argparse without abbreviations (``--step`` is not ``--steps``), whose errors are
    this (sub)command's one-line usage and one line ``PROG: error: ...`` with a near miss
    of a mistyped choice (Python 3.11 has no ``suggest_on_error``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str):
        found = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if found and (near := _near(found[1], re.findall(r"'(.*?)'", found[2]))):
            message += f"; did you mean {near}?"
        spell = self._get_formatter()._format_args
        words = [spell(a, a.dest) for a in self._actions if not a.option_strings]
        print(f"usage: {self.prog} [options] {' '.join(words)}".strip(), file=sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; an unknown argument is an error of its subcommand, with the
    nearest option of that subcommand as a suggestion, as is an incomplete launch over
    many processes."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    sub = next(a for a in parser._actions if a.dest == "command").choices[args.command]
    if unknown:
        options = [o for p in (parser, sub) for a in p._actions for o in a.option_strings]
        hints = [(w, _near(w, options) if w.startswith("-") else None) for w in unknown]
        if len(hints) == 1 and hints[0][1]:
            sub.error(f"unrecognized argument {unknown[0]}; did you mean {hints[0][1]}?")
        words = [w + (f" (did you mean {n}?)" if n else "") for w, n in hints]
        sub.error(f"unrecognized argument{'s' * (len(hints) > 1)} {', '.join(words)}")
    if args.command == "invert" and (problem := _processes_problem(args)):
        sub.error(problem)
    return args


def _processes_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--coordinator / --num-processes / --process-id``, or None:
    all three or none, and 0 <= I < P."""
    given = [args.coordinator, args.num_processes, args.process_id]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        names = ("--coordinator", "--num-processes", "--process-id")
        missing = [n for n, v in zip(names, given, strict=True) if v is None]
        return (
            f"a launch over many processes needs all three of {', '.join(names)}; "
            f"missing {', '.join(missing)}"
        )
    if args.process_id >= args.num_processes:
        return (
            f"--process-id {args.process_id} is outside 0 .. {args.num_processes - 1} "
            f"(--num-processes {args.num_processes})"
        )
    return None


# Every Config field is an invert option, shown in one of these groups ("seed" is the
# training group's own --seed).
CONFIG_GROUPS = {
    "model": (
        "width", "depth", "mu_width", "mu_depth", "n_features", "sigma_u", "sigma_mu",
        "sigma_factor_u", "sigma_factor_mu", "sigma_ratio_z", "activation", "aux_network",
        "ensemble", "ensemble_keep",
    ),
    "physics": ("pde", "mu_model", "weighting", "noise_floor", "mu_ref", "pde_margin"),
    "training": (
        "steps", "sync_interval", "batch_size", "learning_rate", "pde_weight", "pde_warmup",
        "plateau_patience", "plateau_factor", "min_lr", "max_retries", "lbfgs_steps",
        "lbfgs_from", "lbfgs_points", "tf32_steps",
    ),
    "output": ("checkpoint_every", "metric_margin"),
    "parallel": ("max_members_per_chunk",),
}  # fmt: skip


def _config_option(group, field: dataclasses.Field, hint, meaning: str) -> None:
    """``--field-name``, typed from the field's annotation and default; its help the
    field's documentation and its default."""
    literal = [h for h in (hint, *typing.get_args(hint)) if typing.get_origin(h) is typing.Literal]
    choices = typing.get_args(literal[0]) if literal else None  # Literal or Literal | None
    if field.name == "pde":
        from helmholtz_pinn.pinn import forms

        choices = ("auto", *forms.names())
    if field.name == "mu_model":
        from helmholtz_pinn import laws

        choices = ("auto", *laws.available())
        equations = "; ".join(f"{n}: {laws.get(n).equation}" for n in choices[1:])
        meaning = f"{meaning.rstrip('.')} ({equations})."
    kind = type(field.default) if field.default is not None else float
    if field.default is None and int in typing.get_args(hint):
        kind = int
    shown = "" if field.default is None else f" (default: {field.default})"
    group.add_argument(
        "--" + field.name.replace("_", "-"),
        dest=field.name,
        type=str if choices else kind,
        default=None,
        choices=choices,
        metavar=None if choices else {int: "N", float: "X"}.get(kind, "V"),
        help=(meaning.rstrip(".").replace("; None: ", "; default: ") + shown).replace("%", "%%"),
    )


def config_from(args: argparse.Namespace, n_comp: int | None = None) -> Config:
    """The Config of the options given; with ``--cpu-sized`` on top of
    :func:`helmholtz_pinn.config.cpu_settings` of the data's ``n_comp`` components (then
    required: no component count is assumed)."""
    base = cpu_settings(n_comp) if getattr(args, "cpu_sized", False) else {}
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(Config)
        if getattr(args, f.name, None) is not None
    }
    return Config(**{**base, **overrides})


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the four subcommands and their options."""
    parser = _Parser(
        prog="helmholtz-pinn",
        description="PINN inversion of MR elastography wave fields for the shear modulus (Pa).",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    _simulate_parser(sub)
    _invert_parser(sub)
    _baseline_parser(sub)
    _convert_parser(sub)
    _cohort_parser(sub)
    return parser


def _version() -> str:
    """The installed package's version (``helmholtz_pinn.__version__``)."""
    from helmholtz_pinn import __version__

    return __version__


def _simulate_parser(sub) -> None:
    sim = sub.add_parser("simulate", help="write a phantom dataset (.npz) from a forward model")
    sim.add_argument(
        "--physics",
        default="scalar",
        choices=("scalar", "elastic"),
        help="scalar: 2-D Helmholtz phantom per drive direction (finite differences); "
        "elastic: 3-D viscoelastic slab, 3 components (finite elements; minutes at the "
        "default size) (default: scalar)",
    )
    sim.add_argument("--phantom", help="built-in scalar phantom name (default: four-target)")
    sim.add_argument("--out", required=True, type=_npz, help="output .npz file")
    sim.add_argument("--overwrite", action="store_true", help="replace an existing OUT file")
    sim.add_argument("--noise-db", type=float, help="noise power / signal power, dB (-20 = 1 %%)")
    sim.add_argument("--seed", type=int, default=0, help="noise seed (default: 0)")
    sim.add_argument("--frequencies", type=float, nargs="+", help="Hz (default: 60 80 100)")
    sim.add_argument("--components", type=int, help="scalar: drive directions (default: 2)")
    sim.add_argument(
        "--nz", type=int, help="scalar: a 3-D volume of NZ slices, the wave also along z"
    )
    group = sim.add_argument_group(
        "--physics elastic (defaults in parentheses)",
        "The y = 0 face moves rigidly by --drive (x, y, z; the unit of u); the element size "
        "defaults to the background's shear wavelength at the highest frequency / epw.",
    )
    for name, options in ELASTIC_OPTIONS.items():
        group.add_argument("--" + name.replace("_", "-"), default=None, **options)


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0; got {text!r}")
    return value


# The options of simulate --physics elastic: the keywords of forward.elastic.simulate_elastic
# (an option not given, None, leaves the function's default).
ELASTIC_OPTIONS = {
    "layout": dict(choices=("four-target", "two-ellipse"), help="inclusions (four-target)"),
    "output": dict(choices=("volume", "slice"), help="volume or middle z-slice (volume)"),
    "shape": dict(type=int, nargs=3, metavar=("NX", "NY", "NZ"), help="voxels (80 100 10)"),
    "spacing": dict(type=_positive_float, nargs="+", metavar="M", help="voxel size, m (1e-3)"),
    "background": dict(type=_positive_float, metavar="PA", help="background G', Pa (3000)"),
    "lam": dict(type=_positive_float, metavar="PA", help="Lame lambda, Pa (1e6)"),
    "drive": dict(type=float, nargs=3, metavar=("UX", "UY", "UZ"), help="amplitudes (1 0.3 0.1)"),
    "faces": dict(choices=("free", "absorbing"), help="faces x = 0, Lx and y = Ly (free)"),
    "z_faces": dict(choices=("free", "absorbing", "sliding"), help="faces z = 0, Lz (free)"),
    "mesh_size": dict(type=_positive_float, metavar="M", help="element size, m (wavelength/epw)"),
    "elements_per_wavelength": dict(
        type=_positive_float, metavar="N", help="epw: elements per shear wavelength (8)"
    ),
}


def _invert_parser(sub) -> None:
    inv = sub.add_parser(
        "invert",
        usage="%(prog)s [DATA ...] [--out OUT] [options]",
        help="fit the PINN; write mu.npz (Pa), metrics.json, figures",
        description="Fit the PINN to a wave field and write the complex shear modulus (Pa). "
        "Defaults that depend on the data (network sizes, Fourier scales) are described "
        "with their rule; why each default is what it is: docs/defaults.md.",
    )
    groups = {
        name: inv.add_argument_group(name)
        for name in ("data", "model", "physics", "training", "output", "parallel")
    }
    _invert_data_options(groups["data"])
    _invert_output_options(groups["output"])
    _invert_parallel_options(groups["parallel"])
    groups["training"].add_argument(
        "--seed", type=int, default=0, help="seeds the networks and the sampling (default: 0)"
    )
    groups["training"].add_argument(
        "--cpu-sized",
        action="store_true",
        help="settings for a few CPU cores: smaller networks and batch, 3000 steps (5000 for "
        "three-component data; helmholtz_pinn.cpu_settings); options given explicitly win",
    )
    hints, meaning = typing.get_type_hints(Config), field_help()
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for group, names in CONFIG_GROUPS.items():
        for name in names:
            _config_option(groups[group], fields[name], hints[name], meaning.get(name, ""))


def _invert_data_options(data) -> None:
    data.add_argument(
        "data",
        nargs="*",
        type=Path,
        help="dataset .npz (default: the built-in four-target phantom); several files of "
        "one grid are fitted as one batched program, each written to OUT/<file stem>/",
    )
    data.add_argument(
        "--slicewise",
        action=argparse.BooleanOptionalAction,
        help="fit every z-slice of a 3-D dataset with its own 2-D PINN (slices with an "
        "empty mask are left NaN); default: one 3-D fit with the through-plane derivatives",
    )
    data.add_argument(
        "--force", action="store_true", help="fit data that fail the unit checks (f, spacing)"
    )
    data.add_argument(
        "--drop-empty-components",
        action="store_true",
        help="drop components of u that are zero at every frequency",
    )


def _invert_output_options(out) -> None:
    out.add_argument("--out", type=Path, default=Path("out"), help="output folder (default: out)")
    for flag, meaning in (
        ("--overwrite", "replace a finished result already in OUT"),
        ("--resume", "continue from the newest checkpoint in OUT/checkpoints"),
        ("--resume-strict", "as --resume, but an error when OUT/checkpoints has none"),
        ("--no-checkpoints", "write no checkpoints into OUT/checkpoints"),
        ("--nifti", "also write OUT/maps/*.nii.gz: G', G'', |G*|, phase, wave speed (mm)"),
        ("--no-progress", "no progress bar"),
    ):
        out.add_argument(flag, action="store_true", help=meaning)
    out.add_argument(
        "--tensorboard", type=Path, metavar="DIR", help="TensorBoard event files into DIR"
    )


def _invert_parallel_options(par) -> None:
    par.add_argument(
        "--devices",
        type=_devices_arg,
        default="all",
        metavar="N|all",
        help="devices to use: N, or all: every visible device when the work splits (as "
        "many slices, files or ensemble members as devices, or a large problem), else one "
        "(default: all)",
    )
    par.add_argument(
        "--cache-dir",
        type=Path,
        help="persistent compilation cache (default: ~/.cache/helmholtz_pinn/jax)",
    )
    par.add_argument(
        "--coordinator",
        type=_host_port,
        metavar="HOST:PORT",
        help="many processes (all three options or none): address of process 0",
    )
    par.add_argument("--num-processes", type=_positive, metavar="P", help="processes in all")
    par.add_argument("--process-id", type=_non_negative, metavar="I", help="this one, 0 .. P-1")


def _baseline_parser(sub) -> None:
    base = sub.add_parser("baseline", help="classical algebraic Helmholtz inversion (AHI)")
    base.add_argument("data", type=Path, help="dataset .npz")
    base.add_argument(
        "--method",
        default="ahi",
        choices=("ahi", "curl-mdev"),
        help="ahi: MDEV inversion of u (any components); curl-mdev: of curl u (3 components "
        "along x, y, z; removes compressional waves) (default: ahi)",
    )
    base.add_argument(
        "--smoothing",
        choices=["none", "gaussian", "savgol"],
        help="smoothing before the finite-difference Laplacian (default: none for ahi, "
        "gaussian for curl-mdev)",
    )
    width = base.add_mutually_exclusive_group()
    width.add_argument(
        "--sigma",
        type=float,
        help="Gaussian width, voxels; implies --smoothing gaussian (default: 2 for ahi, 1.5 "
        "for curl-mdev)",
    )
    width.add_argument(
        "--sigma-mm", type=float, help="Gaussian width in mm, as --sigma (cubic voxels)"
    )
    base.add_argument(
        "--window", type=int, default=7, help="Savitzky-Golay window, voxels (default: 7)"
    )
    base.add_argument("--out", type=Path, required=True, help="output folder")
    base.add_argument("--overwrite", action="store_true", help="replace a result already in OUT")
    base.add_argument("--force", action="store_true", help="run even if implausible (see invert)")
    base.add_argument(
        "--metric-margin", type=int, default=0, help="as for invert, voxels (default: 0)"
    )


def _convert_parser(sub) -> None:
    conv = sub.add_parser("convert", help="MAT (v5/v7.3) or NIfTI wave images -> dataset .npz")
    conv.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help=".mat/.h5 file, or NIfTI file(s): one complex or a re/im or mag/phase pair",
    )
    conv.add_argument("--out", required=True, type=_npz, help="output .npz file")
    conv.add_argument("--overwrite", action="store_true", help="replace an existing OUT file")
    conv.add_argument("--kind", default="auto", choices=KINDS)
    conv.add_argument("--variable", help="MAT variable holding the wave field")
    conv.add_argument(
        "--axes",
        help="the array's axes in order, letters x y z c f t (and - for a length-1 axis), "
        "e.g. xyzcf or xyzt",
    )
    conv.add_argument("--frequency", type=float, nargs="+", help="drive frequencies, Hz")
    conv.add_argument("--spacing", type=float, nargs="+", help="voxel size per axis")
    conv.add_argument(
        "--spacing-unit",
        default="m",
        choices=["m", "mm"],
        help="unit of --spacing and of spacing read from MAT files (default: m)",
    )
    conv.add_argument(  # choices: readers.PHASE_MODES, presets.PRESETS (not imported here)
        "--phase",
        choices=["auto", "time", "space", "unwrapped"],
        help="the t-axis images are MR phase in radians: unwrap along time, over space, not "
        "at all (unwrapped) or auto (unwrapped if |phase| > pi, else time); offset and "
        "drift are removed (default: auto for a mag/phase NIfTI pair with t, else none)",
    )
    conv.add_argument(
        "--preset",
        choices=["bioqic"],
        help="a known MATLAB export: bioqic = BIOQIC/MDEV 6-D phase [rows, columns, slices, "
        "time steps, components, frequencies], its variable names and info struct",
    )
    conv.add_argument(
        "--mask-from-magnitude",
        action="store_true",
        help="mask the tissue in the magnitude images (a mag/phase NIfTI pair, or a MAT "
        "'magnitude' variable): Otsu threshold of the mean magnitude, holes filled, the "
        "largest region (default: the file's mask variable, else every voxel)",
    )


def _cohort_parser(sub) -> None:
    coh = sub.add_parser(
        "cohort",
        usage="%(prog)s DATA [DATA ...] --out ROOT [options]",
        help="fit many dataset files, each into ROOT/<file stem>/, over the local devices",
        description="Fit each DATA file with its own invert into ROOT/<file stem>/ (the "
        "files of invert), one worker per local device, and write ROOT/cohort.csv: one "
        "row per file and frequency (median G', G'' in Pa, phase, law, fit checks, "
        "status). A folder already holding a result is skipped; a stopped fit continues "
        "from its checkpoints; a failed file is a row, not the end. Exit 1 when a file "
        "failed. Several hosts: docs/scaling.md.",
    )
    coh.add_argument("data", nargs="+", type=Path, help="dataset .npz files")
    coh.add_argument("--out", type=Path, required=True, metavar="ROOT", help="output root folder")
    coh.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="I/N",
        help="fit only the files whose position in DATA is I mod N (host I of N, e.g. "
        "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); the table is ROOT/cohort-IofN.csv "
        "(default: 0/1, every file)",
    )
    coh.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="worker processes, each pinned to an equal share of the local devices; 1 "
        "fits in one process on every device (default: one per device)",
    )
    for flag, meaning in (
        ("--force", "fit data that fail the unit checks (f, spacing)"),
        ("--drop-empty-components", "drop components of u that are zero at every frequency"),
        ("--nifti", "also write ROOT/<stem>/maps/*.nii.gz (as invert --nifti)"),
        ("--no-checkpoints", "write no checkpoints (a stopped file then starts afresh)"),
        ("--no-progress", "no per-file lines"),
    ):
        coh.add_argument(flag, action="store_true", help=meaning)
    coh.add_argument(
        "--cache-dir",
        type=Path,
        help="persistent compilation cache (default: ~/.cache/helmholtz_pinn/jax)",
    )
    coh.add_argument(
        "--seed", type=int, default=0, help="seeds the networks and the sampling (default: 0)"
    )
    group = coh.add_argument_group("fit settings", "as for invert (helmholtz-pinn invert -h)")
    hints, meaning = typing.get_type_hints(Config), field_help()
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for names in CONFIG_GROUPS.values():
        for name in names:
            _config_option(group, fields[name], hints[name], meaning.get(name, ""))


def _shard(text: str) -> tuple[int, int]:
    i, _, n = text.partition("/")
    if i.isdigit() and n.isdigit() and int(i) < int(n):
        return int(i), int(n)
    raise argparse.ArgumentTypeError(f"expected I/N with 0 <= I < N (e.g. 0/4); got {text!r}")


def _npz(text: str) -> Path:
    if not text.lower().endswith(".npz"):
        raise argparse.ArgumentTypeError(f"expected a file name ending in .npz; got {text!r}")
    return Path(text)


def _devices_arg(text: str) -> int | str:
    if text == "all":
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer or 'all'; got {text!r}")


def _positive(text: str) -> int:
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")


def _non_negative(text: str) -> int:
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected an integer >= 0; got {text!r}")


def _host_port(text: str) -> str:
    host, _, port = text.rpartition(":")
    if host and port.isdigit() and 0 < int(port) < 65536:
        return text
    raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 10.0.0.1:1234); got {text!r}")
