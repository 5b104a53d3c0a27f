"""Accuracy study: the PINN in both PDE forms against algebraic Helmholtz inversion (AHI).

Grid: phantoms x noise levels (noise seed fixed) x methods, where the methods are

- ``pinn-helmholtz``: PINN, homogeneous form ``mu Lap u + rho omega^2 u = 0``;
- ``pinn-hetero``: PINN, heterogeneous form ``div(mu grad u) + rho omega^2 u = 0``;
- ``ahi``: AHI (MDEV form) on the raw field;
- ``ahi-gaussian``: AHI after Gaussian smoothing of u (``--ahi-sigma`` voxels, the library default
  ``lab.AHI_SIGMA`` = 2).

Each cell records the median relative error of the storage modulus Re(mu) (a fraction),
Pearson R of Re(mu), the contrast transfer of every target region (1.0 = the true
contrast against the background) and the wall time in s (PINN: preparation, training with
its compilation, and prediction). Written into ``--out`` (default ``docs/``):
``accuracy.json`` (all numbers, rewritten after every cell), ``accuracy.md`` (one table
per phantom and the targets of the issue) and ``figures/accuracy_<phantom>.png``
(recovered Re(mu) in kPa beside the truth, clean and -20 dB). Every result is also
printed to stdout as one JSON line the moment it completes, so a run cut short keeps
what it finished; ``--report-only`` rebuilds the Markdown from ``accuracy.json`` or from
such a captured stdout log.

Elastic FEM phantoms (``--elastic DIR``: the files and manifest.json written by
``scripts/elastic_phantoms.py``; the code is in ``scripts/accuracy_elastic.py``): files x
methods, the methods ``pinn-<form>`` for each ``--pde`` form (default: every form of
``helmholtz_pinn.lab.pde_forms()`` when ``--methods`` is not given, else none),
``pinn-auto`` (the library's default configuration), ``ahi``, ``ahi-gaussian`` and
``curl-mdev``. Files are chosen with ``--set``, ``--output``,
``--case``, ``--noise`` and ``--noise-seeds`` (files listed but absent are skipped), cut
with ``--limit-files``; ``--skip-done`` leaves out the cells earlier logs finished and
``--time-budget`` stops starting files, so a study too long for one invocation is run in
several and merged with ``--report-only``. Written: ``accuracy_elastic.json`` / ``.md``,
``figures/accuracy_elastic_<case>_<output>.png`` and ``elastic_maps/`` (the G' maps the
figures are drawn from, which ``--report-only`` draws again); never accuracy.json/.md.
``--report-only`` merges scalar and elastic results into one report.

Examples (the script finds the package in its checkout; no install needed):
  full study, library defaults (GPU):  python scripts/accuracy.py | tee accuracy.log
  CPU smoke test (tiny):               python scripts/accuracy.py --quick --out /tmp/a
  tables again from the numbers:       python scripts/accuracy.py --report-only docs/accuracy.json
  a study split over runs, merged:     python scripts/accuracy.py --report-only a.log b.log
  elastic held-out slices (GPU):       python scripts/accuracy.py --elastic data/elastic \
                                         --set held-out --output slice --pde hetero navier \
                                         --out /tmp/el | tee el1.log
  the rest of it, another invocation:  ... --skip-done el1.log --time-budget 420 | tee el2.log
  elastic CPU smoke test:              python scripts/accuracy.py --elastic data/elastic \
                                         --quick --limit-files 2 --out /tmp/e
  both studies in one report:          python scripts/accuracy.py --report-only \
                                         docs/accuracy.json el1.log el2.log --out docs
"""

from __future__ import annotations

# ruff: noqa: E402 (the library and the elastic part are imported after sys.path is set)
import argparse
import dataclasses
import datetime
import itertools
import json
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

if str(ROOT / "scripts") not in sys.path:  # the elastic part, also when loaded by path
    sys.path.insert(0, str(ROOT / "scripts"))

import accuracy_elastic as elastic
from accuracy_elastic import (
    CLEAN_MAX_ERROR,
    CLEAN_MIN_CONTRAST,
    CLEAN_MIN_R,
    FIGURE_NOISE,
    NOISY_DB,
    NOISY_MAX_ERROR,
)
from study_report import emit, noise_label, num, pct, scores, seconds

import helmholtz_pinn as hp
from helmholtz_pinn import lab

METHODS = ("pinn-helmholtz", "pinn-hetero", "ahi", "ahi-gaussian")
PINN_METHODS = {"pinn-helmholtz": "helmholtz", "pinn-hetero": "hetero"}
LABELS = {
    "pinn-helmholtz": "PINN, homogeneous form",
    "pinn-hetero": "PINN, heterogeneous form",
    "ahi": "AHI",
    "ahi-gaussian": "AHI, Gaussian-smoothed",
}
DEFAULT_PHANTOMS = ("four-target", "smooth", "stripes")
DEFAULT_NOISE = (None, -30.0, -20.0, -10.0)  # dB noise-to-signal power; None = clean
# The targets (fractions), shared with the elastic part: clean PINN, and PINN at
# -20 dB against AHI on the same file (the elastic part compares with curl-MDEV).

NOISY_MAX_RATIO = 0.25

# --quick: every phantom on 40x50 voxels of 2 mm (the default 80x100 mm field of view at
# half resolution), a small network, few steps, one noise level. For the CPU test only.
QUICK_PHANTOM = {"shape": (40, 50), "spacing": 2e-3}
QUICK_CONFIG = {
    "width": 32,
    "depth": 2,
    "mu_width": 16,
    "mu_depth": 1,
    "n_features": 16,
    "batch_size": 256,
    "steps": 100,
    "sync_interval": 50,
    "pde_warmup": 50,
}
QUICK_NOISE = (-20.0,)


# --------------------------------------------------------------------------- running


def parse_noise(text: str) -> float | None:
    """``clean`` (or ``none``) -> None, else the noise-to-signal power ratio in dB."""
    if text.lower() in ("clean", "none"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"noise level must be 'clean' or a number of dB such as -20; got {text!r}"
        ) from None


def run_cell(
    method: str, dataset, cfg: hp.Config, ahi_sigma: float
) -> tuple[dict, np.ndarray | None]:
    """One method on one dataset: (facts, recovered mu in Pa or None when it failed)."""
    if method in PINN_METHODS:
        try:
            res = hp.invert(dataset, cfg, progress=False, pde=PINN_METHODS[method])
        except hp.HelmholtzPinnError as err:
            return {"error": str(err)}, None
        m = res.metrics
        facts = {
            "wall_time_s": m["wall_time_s"],
            "steps": m.get("steps"),
            "retries": m.get("retries"),
            "final_loss": m.get("final_loss"),
            "mu_ref_pa": m.get("mu_ref_pa"),
        }
        return facts, res.mu
    smoothing = "gaussian" if method == "ahi-gaussian" else "none"
    t0 = time.perf_counter()
    mu = hp.baseline(dataset, smoothing=smoothing, sigma=ahi_sigma)
    return {"wall_time_s": time.perf_counter() - t0, "smoothing": smoothing}, mu


def accuracy_row(phantom: str, noise_db, method: str, facts: dict, mu, dataset) -> dict:
    """The JSON record of one cell: headline numbers at the top, full metrics below."""
    row = {
        "phantom": phantom,
        "noise_db": noise_db,
        "noise": noise_label(noise_db),
        "method": method,
        **facts,
    }
    if mu is None:
        return row
    return {**row, **scores(mu, dataset, "median_rel_error_storage", "pearson_r_storage")}


def machine() -> dict:
    """What ran the study: JAX devices, the GPU name from nvidia-smi, the CPU."""
    import jax

    devices = jax.devices()
    gpu = None
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
            gpu = ", ".join(line.strip() for line in out.stdout.splitlines() if line.strip())
        except (OSError, subprocess.SubprocessError):
            gpu = None
    cpu = platform.processor() or None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
        "device_kind": devices[0].device_kind,
        "nvidia_smi": gpu,
        "cpu": cpu,
        "platform": platform.platform(),
    }


def phantom_info(dataset, overrides: dict) -> dict:
    """Grid, spacing, frequencies and the voxel count of each region (to rank the targets)."""
    labels, counts = np.unique(np.asarray(dataset.regions)[dataset.mask], return_counts=True)
    return {
        "shape": list(dataset.grid),
        "spacing_m": [float(h) for h in dataset.spacing],
        "frequencies_hz": [float(f) for f in dataset.frequency],
        "components": int(dataset.n_comp),
        "overrides": {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
        "region_voxels": {str(int(k)): int(c) for k, c in zip(labels, counts, strict=True)},
    }


def pinn_config(args) -> tuple[hp.Config, dict]:
    """The PINN settings of a run: the library defaults with --quick, --config and --steps
    applied; (config, the overrides)."""
    overrides = dict(QUICK_CONFIG) if args.quick else {}
    if args.config:
        overrides.update(json.loads(args.config))
    if args.steps is not None:
        overrides["steps"] = args.steps
    return hp.Config().replace(**overrides), overrides


def run_meta(args, command: str, cfg: hp.Config, overrides: dict) -> dict:
    """What every run records: date, command, machine, PINN and baseline settings."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "machine": machine(),
        "quick": bool(args.quick),
        "noise_seed": args.seed,
        "ahi_sigma_voxels": args.ahi_sigma,
        "config": dataclasses.asdict(cfg),
        "config_overrides": overrides,
    }


def run_study(args, command: str) -> dict:
    """Run every cell; print, save and report as the cells complete. Returns the study."""
    import jax

    out = lab.prepare_dir(args.out)
    lab.prepare_dir(out / "figures")
    cfg, overrides = pinn_config(args)
    phantom_overrides = dict(QUICK_PHANTOM) if args.quick else {}
    study = {
        "meta": {
            **run_meta(args, command, cfg, overrides),
            "phantom_overrides": phantom_overrides,
            "phantoms": list(args.phantoms),
            "noise_db": list(args.noise),
            "methods": list(args.methods),
            "complete": False,
        },
        "phantoms": {},
        "results": [],
    }
    emit({"meta": study["meta"]})
    print(
        f"# {jax.devices()[0]}: {len(args.phantoms)} phantoms x {len(args.noise)} noise "
        f"levels x {len(args.methods)} methods",
        file=sys.stderr,
        flush=True,
    )
    for name in args.phantoms:
        maps: dict = {}
        t0 = time.perf_counter()
        clean = hp.simulate_phantom(name, **phantom_overrides)  # once per phantom
        study["phantoms"][name] = phantom_info(clean, phantom_overrides)
        study["phantoms"][name]["simulate_s"] = time.perf_counter() - t0
        emit({"phantom_info": {"phantom": name, **study["phantoms"][name]}})
        truth = np.asarray(clean.mu)[0].real
        for noise_db in args.noise:
            # what simulate_phantom(name, noise_db=, seed=) returns, without solving again
            dataset = dataclasses.replace(clean, u=lab.add_noise(clean.u, noise_db, seed=args.seed))
            for method in args.methods:
                facts, mu = run_cell(method, dataset, cfg, args.ahi_sigma)
                row = accuracy_row(name, noise_db, method, facts, mu, dataset)
                study["results"].append(row)
                emit(row)
                if mu is not None and noise_db in _figure_noise(args.noise):
                    maps[(noise_db, method)] = np.asarray(mu).reshape(-1, *dataset.grid)[0].real
                lab.write_json(out / "accuracy.json", study)
        figure(name, truth, maps, study, out / "figures" / f"accuracy_{name}.png")
        write_report(study, out / "accuracy.md")
    study["meta"]["complete"] = True
    emit({"complete": {"cells": len(study["results"])}})
    lab.write_json(out / "accuracy.json", study)
    write_report(study, out / "accuracy.md")
    return study


def _figure_noise(noise: list) -> list:
    """The noise levels drawn: clean and -20 dB when run, else the first and last."""
    shown = [n for n in FIGURE_NOISE if n in noise]
    return shown or list(dict.fromkeys([noise[0], noise[-1]]))


# --------------------------------------------------------------------------- figures


def figure(name: str, truth, maps: dict, study: dict, path: Path) -> Path | None:
    """Rows: noise levels; columns: the truth, then each method's recovered Re(mu), kPa."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if truth is None or not maps:
        return None
    rows = list(dict.fromkeys(n for n, _ in maps))
    methods = [m for m in study["meta"]["methods"] if any((n, m) in maps for n in rows)]
    info = study["phantoms"][name]
    extent = (
        0,
        info["shape"][0] * info["spacing_m"][0] * 1e3,
        0,
        info["shape"][1] * info["spacing_m"][1] * 1e3,
    )
    lo, hi = float(truth.min()) / 1e3, float(truth.max()) / 1e3
    pad = 0.15 * (hi - lo) if hi > lo else 0.2 * hi
    vmin, vmax = max(0.0, lo - pad), hi + pad
    errors = {
        (r["noise_db"], r["method"]): r.get("median_rel_error_storage")
        for r in study["results"]
        if r["phantom"] == name
    }
    ncol = 1 + len(methods)
    fig, axes = plt.subplots(len(rows), ncol, figsize=(2.7 * ncol, 3.0 * len(rows)), squeeze=False)
    try:
        for i, noise_db in enumerate(rows):
            panels = [("truth", truth)] + [(m, maps.get((noise_db, m))) for m in methods]
            for j, (label, img) in enumerate(panels):
                ax = axes[i, j]
                if img is None:
                    ax.set_axis_off()
                    continue
                im = ax.imshow(
                    img.T / 1e3, origin="lower", extent=extent, cmap="viridis", vmin=vmin, vmax=vmax
                )
                title = "true Re(mu)" if label == "truth" else LABELS[label]
                err = errors.get((noise_db, label))
                if label != "truth" and err is not None:
                    title += f"\nmedian error {100 * err:.1f} %"
                ax.set_title(f"{title}\n{noise_label(noise_db)}", fontsize=8)
                ax.set_xlabel("x (mm)", fontsize=7)
                ax.set_ylabel("y (mm)", fontsize=7)
                ax.tick_params(labelsize=6)
                bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
                bar.set_label("Re(mu) (kPa)", fontsize=7)
                bar.ax.tick_params(labelsize=6)
        fig.suptitle(
            f"{name}: recovered storage modulus Re(mu), kPa "
            "(colour scale: the truth's range, widened by 15 % of it at each end; beyond, clipped)",
            fontsize=10,
        )
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------- report


def load_study(path: str | Path) -> dict:
    """A study from ``accuracy.json`` / ``accuracy_elastic.json`` or from the JSON lines a
    run printed to stdout (scalar and elastic cells alike)."""
    text = Path(path).read_text()
    try:
        study = json.loads(text)
        if isinstance(study, dict) and ("results" in study or "elastic_results" in study):
            return {"phantoms": {}, "results": [], "elastic_files": {}, "elastic_results": [],
                    **study}  # fmt: skip
    except json.JSONDecodeError:
        pass
    study = {"meta": {}, "phantoms": {}, "results": [], "elastic_files": {}, "elastic_results": []}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # progress messages or a line cut off by a timeout
        if not isinstance(record, dict):
            continue
        if "meta" in record:
            study["meta"] = record["meta"]
        elif "complete" in record:
            study["meta"]["complete"] = True
        elif "phantom_info" in record:
            info = dict(record["phantom_info"])
            study["phantoms"][info.pop("phantom")] = info
        elif "elastic_file" in record:
            study["elastic_files"][record["elastic_file"]["file"]] = record["elastic_file"]
        elif "method" in record and "file" in record:
            study["elastic_results"].append(record)
        elif "method" in record and "phantom" in record:
            study["results"].append(record)
    if not study["results"] and not study["elastic_results"]:
        raise ValueError(f"{path}: no accuracy results (neither accuracy.json nor JSON lines)")
    return study


def merge_studies(studies: list[dict]) -> dict:
    """One study from several runs: the cells of all (a later run's cell replaces an
    earlier one's), the first scalar run's meta (else the first run's) with every run's
    command and date, and every run's meta under ``runs``."""
    if len(studies) == 1:
        return studies[0]
    first = next((st for st in studies if st.get("results")), studies[0])
    meta = dict(first.get("meta", {}))
    for key in ("command", "date"):
        values = [st.get("meta", {}).get(key) for st in studies]
        meta[key] = " ; ".join(dict.fromkeys(v for v in values if v)) or None
    meta["runs"] = [
        r for st in studies for r in st.get("meta", {}).get("runs", [st.get("meta", {})])
    ]
    cells: dict = {}
    elastic_cells: dict = {}
    phantom_infos: dict = {}
    elastic_files: dict = {}
    wanted = set()  # every cell some run asked for
    wanted_elastic = set()
    for st in studies:
        phantom_infos.update(st.get("phantoms", {}))
        elastic_files.update(st.get("elastic_files", {}))
        for r in st.get("results", []):
            cells[(r["phantom"], r["noise_db"], r["method"])] = r
        for r in st.get("elastic_results", []):
            elastic_cells[(r["file"], r["method"])] = r
        for m in st.get("meta", {}).get("runs", [st.get("meta", {})]):
            wanted.update(
                itertools.product(
                    m.get("phantoms", []), m.get("noise_db", []), m.get("methods", [])
                )
            )
            el = m.get("elastic") or {}
            wanted_elastic.update(itertools.product(el.get("files", []), el.get("methods", [])))
    meta["complete"] = (
        bool(wanted or wanted_elastic)
        and wanted <= set(cells)
        and wanted_elastic <= set(elastic_cells)
    )
    return {
        "meta": meta,
        "phantoms": phantom_infos,
        "results": list(cells.values()),
        "elastic_files": elastic_files,
        "elastic_results": list(elastic_cells.values()),
    }


def largest_targets(study: dict, name: str, n: int = 2) -> list[str]:
    """Labels of the ``n`` target regions (label >= 2) with the most voxels."""
    voxels = study.get("phantoms", {}).get(name, {}).get("region_voxels", {})
    if not voxels:  # fall back on the labels seen in the results, in label order
        labels = set()
        for r in study["results"]:
            if r["phantom"] == name:
                labels.update(r.get("contrast_transfer") or {})
        return sorted(labels, key=int)[:n]
    targets = [k for k in voxels if int(k) >= 2]
    return sorted(targets, key=lambda k: (-voxels[k], int(k)))[:n]


def _find(study: dict, name: str, noise_db, method: str) -> dict | None:
    for r in study["results"]:
        if r["phantom"] == name and r["noise_db"] == noise_db and r["method"] == method:
            return r
    return None


def _missing(row: dict | None) -> str:
    """Why a cell has no numbers: not run, or the fit failed."""
    return "not run" if row is None else f"failed: {row.get('error', 'no result')}"


def _verdict(ok: bool | None) -> str:
    return "not run" if ok is None else ("met" if ok else "NOT met")


def targets(study: dict, name: str) -> list[dict]:
    """The issue's targets for each PINN form on phantom ``name``: rows of
    (method, target, value, met), ``met`` None where the cells were not run."""
    big = largest_targets(study, name)
    noisy_label = noise_label(NOISY_DB)
    rows = []

    def add(method, short, target, value, met):
        rows.append(
            {"method": method, "short": short, "target": target, "value": value, "met": met}
        )

    def error(noise_db, method):
        row = _find(study, name, noise_db, method)
        return None if row is None else row.get("median_rel_error_storage")

    for method in PINN_METHODS:
        clean = _find(study, name, None, method)
        err = error(None, method)
        if err is not None:
            r = clean.get("pearson_r_storage")
            contrast = [(clean.get("contrast_transfer") or {}).get(k) for k in big]
            add(
                method,
                "clean error",
                f"clean: median error <= {pct(CLEAN_MAX_ERROR, 0)}",
                pct(err),
                err <= CLEAN_MAX_ERROR,
            )
            add(
                method,
                "clean R",
                f"clean: R >= {CLEAN_MIN_R}",
                num(r),
                r is not None and r >= CLEAN_MIN_R,
            )
            add(
                method,
                "clean contrast",
                f"clean: contrast of the two largest targets (regions {', '.join(big)}) >= "
                f"{pct(CLEAN_MIN_CONTRAST, 0)}",
                ", ".join(pct(c) for c in contrast),
                bool(contrast) and all(c is not None and c >= CLEAN_MIN_CONTRAST for c in contrast),
            )
        else:
            add(method, "clean", "clean targets", _missing(clean), None)
        err = error(NOISY_DB, method)
        if err is not None:
            add(
                method,
                f"{noisy_label} error",
                f"{noisy_label}: median error <= {pct(NOISY_MAX_ERROR, 0)}",
                pct(err),
                err <= NOISY_MAX_ERROR,
            )
            e_ahi, e_gauss = error(NOISY_DB, "ahi"), error(NOISY_DB, "ahi-gaussian")
            target = f"{noisy_label}: error <= {NOISY_MAX_RATIO}x the AHI error on the same file"
            if e_ahi:
                value = f"{pct(err)} / {pct(e_ahi)} = x{err / e_ahi:.3f}"
                if e_gauss:
                    value += f"; against Gaussian-smoothed AHI x{err / e_gauss:.2f}"
                add(method, f"{noisy_label} vs AHI", target, value, err / e_ahi <= NOISY_MAX_RATIO)
            else:
                add(method, f"{noisy_label} vs AHI", target, "n/a", None)
        else:
            noisy = _find(study, name, NOISY_DB, method)
            add(method, noisy_label, f"{noisy_label} targets", _missing(noisy), None)
    return rows


def report(study: dict, *, regenerated_by: str | None = None) -> str:
    """The Markdown report of a study (tables per phantom, targets, provenance; then the
    elastic phantoms' sections, or only those when no scalar phantom was run)."""
    meta = study.get("meta", {})
    cfg = meta.get("config", {})
    if not study.get("results"):
        return "\n".join(_elastic_header(study, regenerated_by) + elastic.report_sections(study))
    lines = [
        "# Accuracy study: PINN against algebraic Helmholtz inversion",
        "",
        "Median relative error of the storage modulus Re(mu) over the mask, Pearson R of "
        "Re(mu), contrast transfer of each target region (recovered over true contrast "
        "against the background, from region medians: 100 % is perfect, 0 % a flat map) "
        "and wall time. PINN wall time covers preparation, training (with its compilation; "
        "the first fit of a shape compiles) and prediction. Noise: complex Gaussian at the "
        "given noise-to-signal power ratio, seed "
        f"{meta.get('noise_seed', 'n/a')}. AHI Gaussian smoothing: sigma "
        f"{meta.get('ahi_sigma_voxels', 'n/a')} voxels. The issue's -20 dB ratio target is "
        "taken against plain AHI, the baseline of the issue (the ratio against the "
        "Gaussian-smoothed AHI is shown beside it); the contrast target uses the two target "
        "regions with the most voxels.",
        "",
        *_provenance(meta),
        f"- PINN settings: steps {cfg.get('steps', '?')}, width {cfg.get('width', '?')} x "
        f"depth {cfg.get('depth', '?')}, mu-network {cfg.get('mu_width', '?')} x "
        f"{cfg.get('mu_depth', '?')}, {cfg.get('n_features', '?')} Fourier features, batch "
        f"{cfg.get('batch_size', '?')}, mu model {cfg.get('mu_model', '?')}; overrides of the "
        f"library defaults: `{json.dumps(meta.get('config_overrides', {}))}`",
    ]
    if meta.get("phantom_overrides"):
        lines.append(f"- Phantom overrides: `{json.dumps(meta['phantom_overrides'])}`")
    if meta.get("quick"):
        lines.append("- **--quick smoke run: tiny grid and network, not a measurement.**")
    if not meta.get("complete", True):
        lines.append("- **Incomplete run: only the cells below finished.**")
    if regenerated_by:
        lines.append(f"- Report regenerated from the saved numbers by `{regenerated_by}`")
    names = list(dict.fromkeys(r["phantom"] for r in study["results"]))
    lines += [
        "",
        "## Summary: the issue's targets",
        "",
        "| phantom | PINN form | targets met | not met |",
        "|---|---|---|---|",
    ]
    for name in names:
        rows = targets(study, name)
        for method in PINN_METHODS:
            mine = [t for t in rows if t["method"] == method and t["met"] is not None]
            missed = ", ".join(t["short"] for t in mine if not t["met"]) or "none"
            met = sum(bool(t["met"]) for t in mine)
            lines.append(f"| {name} | {LABELS[method]} | {met} of {len(mine)} | {missed} |")
    for name in names:
        info = study.get("phantoms", {}).get(name, {})
        rows = [r for r in study["results"] if r["phantom"] == name]
        labels = sorted({k for r in rows for k in (r.get("contrast_transfer") or {})}, key=int)
        voxels = info.get("region_voxels", {})
        lines += ["", f"## {name}", ""]
        if "shape" in info:
            lines.append(
                f"{info['shape'][0]} x {info['shape'][1]} voxels of "
                f"{info['spacing_m'][0] * 1e3:g} x {info['spacing_m'][1] * 1e3:g} mm, "
                f"{', '.join(f'{f:g}' for f in info['frequencies_hz'])} Hz, "
                f"{info['components']} components; target regions (voxels): "
                + (", ".join(f"{k} ({voxels[k]})" for k in voxels if int(k) >= 2) or "none")
                + f". Figure: `figures/accuracy_{name}.png`."
            )
            lines.append("")
        head = ["noise", "method", "median error Re(mu)", "R"]
        head += [f"contrast {k}" for k in labels] + ["wall s"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            if "error" in r:
                cells = [
                    r["noise"],
                    LABELS.get(r["method"], r["method"]),
                    f"failed: {r['error']}",
                    "",
                ] + [""] * len(labels)
            else:
                ct = r.get("contrast_transfer") or {}
                cells = [
                    r["noise"],
                    LABELS.get(r["method"], r["method"]),
                    pct(r.get("median_rel_error_storage")),
                    num(r.get("pearson_r_storage")),
                ]
                cells += [pct(ct.get(k), 0) for k in labels]
            cells.append(seconds(r.get("wall_time_s")))
            lines.append("| " + " | ".join(cells) + " |")
        lines += [
            "",
            f"Targets of the issue on {name}:",
            "",
            "| PINN form | target | value | |",
            "|---|---|---|---|",
        ]
        for t in targets(study, name):
            lines.append(
                f"| {LABELS[t['method']]} | {t['target']} | {t['value']} | {_verdict(t['met'])} |"
            )
    lines += elastic.report_sections(study)
    lines.append("")
    return "\n".join(lines)


def _provenance(meta: dict) -> list[str]:
    """The date, machine and command lines of a report's header."""
    mach = meta.get("machine", {})
    devices = ", ".join(mach.get("devices", [])) or "?"
    return [
        f"- Date: {meta.get('date', 'n/a')}",
        f"- Machine: JAX {mach.get('jax_version', '?')} on {mach.get('backend', '?')}, "
        f"devices {devices} ({mach.get('device_kind', '?')}); nvidia-smi: "
        f"{mach.get('nvidia_smi') or 'n/a'}; CPU: {mach.get('cpu') or 'n/a'}",
        f"- Command: `{meta.get('command', 'n/a')}`",
    ]


def _elastic_header(study: dict, regenerated_by: str | None) -> list[str]:
    """Title and provenance of a report with elastic phantoms only."""
    meta = study.get("meta", {})
    lines = [
        "# Accuracy study: PINN against baselines on elastic FEM phantoms",
        "",
        *_provenance(meta),
    ]
    if meta.get("quick"):
        lines.append("- **--quick smoke run: tiny network, few steps; not a measurement.**")
    if regenerated_by:
        lines.append(f"- Report regenerated from the saved numbers by `{regenerated_by}`")
    return lines + [""]


def write_report(study: dict, path: Path, *, regenerated_by: str | None = None) -> Path:
    path = Path(path)
    path.write_text(report(study, regenerated_by=regenerated_by))
    return path


# --------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--phantoms",
        nargs="+",
        default=None,
        choices=sorted(hp.PHANTOMS),
        help=f"default: {' '.join(DEFAULT_PHANTOMS)}",
    )
    parser.add_argument(
        "--noise",
        nargs="+",
        type=parse_noise,
        default=None,
        help="noise levels: 'clean' or dB noise-to-signal power (default: "
        "clean -30 -20 -10; --quick: -20); with --elastic, a filter of the files (default: all)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        metavar="METHOD",
        help=f"scalar phantoms: {', '.join(METHODS)} (default: all); with --elastic: "
        f"{', '.join(elastic.DEFAULT_METHODS)} and pinn-<form>, added to those of --pde "
        "(default: all, and every form unless --pde names some)",
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="PINN training steps (default: the library default)"
    )
    parser.add_argument(
        "--config",
        default=None,
        help="JSON dict of further Config overrides, e.g. '{\"width\": 64}'",
    )
    parser.add_argument("--seed", type=int, default=0, help="noise seed (fixed for all cells)")
    parser.add_argument(
        "--ahi-sigma",
        type=float,
        default=lab.AHI_SIGMA,
        help="Gaussian smoothing of the smoothed AHI, voxels (the library default)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny smoke run: 40x50 grid of 2 mm voxels, small network, "
        f"{QUICK_CONFIG['steps']} steps, one noise level",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default docs/; with --report-only, the folder of the JSON file)",
    )
    parser.add_argument(
        "--report-only",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="only write accuracy.md (and accuracy.json) from accuracy.json files or captured "
        "stdout logs; several are merged (a study split over runs), later cells win; with "
        "elastic cells only: accuracy_elastic.md/.json",
    )
    group = parser.add_argument_group(
        "elastic FEM phantoms (files of scripts/elastic_phantoms.py; every filter optional)"
    )
    group.add_argument(
        "--elastic",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the study on DIR/manifest.json's files instead of the scalar phantoms; "
        "writes accuracy_elastic.json / .md, figures/accuracy_elastic_*.png, elastic_maps/",
    )
    group.add_argument("--set", nargs="+", choices=elastic.SETS, default=None)
    group.add_argument("--output", nargs="+", choices=elastic.OUTPUTS, default=None)
    group.add_argument("--case", nargs="+", default=None, metavar="CASE")
    group.add_argument(
        "--noise-seeds", nargs="+", type=int, default=None, metavar="SEED",
        help="noisy files of these noise seeds only (clean files always pass)",
    )  # fmt: skip
    group.add_argument(
        "--pde",
        nargs="*",
        choices=lab.pde_forms(),
        default=None,
        metavar="FORM",
        help=f"PINN forms run as pinn-<form> (of {', '.join(lab.pde_forms())}; default: all "
        "when --methods is not given, else none; none: --pde alone)",
    )
    group.add_argument(
        "--limit-files", type=int, default=None, metavar="N",
        help="only the first N selected files that still have cells to run",
    )  # fmt: skip
    group.add_argument(
        "--skip-done", type=Path, nargs="+", default=None, metavar="LOG",
        help="skip the cells that finished without error in these logs or JSON files",
    )  # fmt: skip
    group.add_argument(
        "--time-budget", type=float, default=None, metavar="S",
        help="start no new file (with --batch: no new method) after S seconds",
    )  # fmt: skip
    group.add_argument(
        "--batch",
        action="store_true",
        help="fit the selected files of one case and output as one batched program per PINN "
        "method (shared mu_ref and Fourier scales; wall time per cell = batch time / members)",
    )
    group.add_argument(
        "--no-figures",
        action="store_true",
        help="draw no elastic figures (the maps are still saved; --report-only draws them)",
    )
    group.add_argument(
        "--curl-sigma", type=float, default=lab.CURL_SIGMA,
        help="Gaussian smoothing of curl-MDEV, voxels (default: the library default)",
    )  # fmt: skip
    parser.add_argument(
        "--compile-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="persistent compilation cache (default: the library's, "
        "~/.cache/helmholtz_pinn/jax); fits that differ only in their data compile once",
    )
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="do not use the persistent compilation cache",
    )
    return parser


ELASTIC_ONLY = ("set", "output", "case", "noise_seeds", "pde", "limit_files", "skip_done",
                "time_budget", "batch", "no_figures")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = shlex.join(
        ["python", *(sys.argv if argv is None else ["scripts/accuracy.py", *argv])]
    )
    if args.report_only is not None:
        study = merge_studies([load_study(p) for p in args.report_only])
        out = lab.prepare_dir(args.out or args.report_only[0].parent)
        stem = "accuracy" if study.get("results") else "accuracy_elastic"
        if [p.resolve() for p in args.report_only] != [(out / f"{stem}.json").resolve()]:
            lab.write_json(out / f"{stem}.json", study)
        path = write_report(study, out / f"{stem}.md", regenerated_by=command)
        # elastic figures again, from the maps the runs saved beside their results
        runs = study.get("meta", {}).get("runs", [study.get("meta", {})])
        folders = [
            Path(m["elastic"]["maps_dir"]) for m in runs if "maps_dir" in m.get("elastic", {})
        ]
        folders += [p.parent / "elastic_maps" for p in args.report_only] + [out / "elastic_maps"]
        folders = [f for f in dict.fromkeys(folders) if f.is_dir()]
        for case, output in dict.fromkeys(
            (i["case"], i["output"]) for i in study.get("elastic_files", {}).values()
        ):
            if not args.no_figures:
                elastic.elastic_figure(study, case, output, folders, out / "figures")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    args.out = args.out or ROOT / "docs"
    if args.elastic is not None:
        if args.phantoms:
            parser.error("--phantoms is for the scalar phantoms; --elastic uses --set/--case")
        args.seeds = args.noise_seeds
        try:
            elastic.methods_of(args.pde, args.methods)
        except hp.ConfigError as err:
            parser.error(str(err))
    else:
        given = [f"--{k.replace('_', '-')}" for k in ELASTIC_ONLY if getattr(args, k)]
        if args.pde is not None and "--pde" not in given:
            given.append("--pde")
        if given:
            parser.error(f"{', '.join(given)}: only with --elastic DIR")
        bad = [m for m in args.methods or [] if m not in METHODS]
        if bad:
            parser.error(f"--methods: unknown {bad}; valid for the scalar phantoms: {METHODS}")
        args.methods = args.methods or list(METHODS)
        args.phantoms = args.phantoms or list(DEFAULT_PHANTOMS)
        args.noise = args.noise or list(QUICK_NOISE if args.quick else DEFAULT_NOISE)
    if not args.no_compile_cache:
        hp.enable_compilation_cache(args.compile_cache, min_compile_time_s=0.5)
    t0 = time.perf_counter()
    if args.elastic is not None:
        cfg, overrides = pinn_config(args)
        meta = run_meta(args, command, cfg, overrides)
        elastic.run_elastic(args, cfg, meta, load_study=load_study, write_report=write_report)
        written = "accuracy_elastic.md, accuracy_elastic.json, figures/, elastic_maps/"
    else:
        run_study(args, command)
        written = "accuracy.md, accuracy.json, figures/"
    print(
        f"# done in {time.perf_counter() - t0:.0f} s: {args.out}/{written}",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
