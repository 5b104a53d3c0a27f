"""The elastic part of ``scripts/accuracy.py``: the 3-component FEM phantoms written by
``scripts/elastic_phantoms.py`` x methods, and its report sections. Also the number
formatting and JSON-line helpers that both parts share are in ``study_report.py``.

Files: ``DIR/manifest.json`` lists entries (file, case, set "tuning"/"held-out", output
"volume"/"slice", noise_db, seed, settings, frequency_hz); each file is a canonical
dataset (``helmholtz_pinn.load``), u of shape (F, 3, *grid), with the true mu and
the regions. Methods:

- ``pinn-<name>``: the PINN with ``pde=<name>``, for every form of
  ``helmholtz_pinn.lab.pde_forms()`` asked for with ``--pde``;
- ``pinn-auto``: the PINN with the library's default configuration (its ``pde``);
- ``ahi``, ``ahi-gaussian``: algebraic Helmholtz inversion of u (MDEV form), raw and
  after Gaussian smoothing (``--ahi-sigma`` voxels);
- ``curl-mdev``: the same inversion of curl u (``--curl-sigma`` voxels of Gaussian
  smoothing, the library default ``lab.CURL_SIGMA``); needs the three components.

A method that raises one of the package's errors (or, for a baseline, its documented
ValueError on unusable input) is recorded with the error and the study goes on.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from study_report import emit, noise_label, num, pct, scores, seconds

import helmholtz_pinn as hp
from helmholtz_pinn import lab

SETS = ("tuning", "held-out")
OUTPUTS = ("volume", "slice")
BASELINES = ("ahi", "ahi-gaussian", "curl-mdev")
AUTO = "pinn-auto"
DEFAULT_METHODS = (AUTO, *BASELINES)
SET_LABELS = {"tuning": "tuning set (defaults chosen on it)", "held-out": "held-out set"}
FIGURE_NOISE = (None, -20.0)

# The targets on the elastic phantoms (fractions), per file; -20 dB against
# curl-MDEV on the same file.
CLEAN_MAX_ERROR = 0.05
CLEAN_MIN_R = 0.9
CLEAN_MIN_CONTRAST = 0.8
NOISY_DB = -20.0
NOISY_MAX_ERROR = 0.15
NOISY_MIN_R = 0.75
NOISY_MAX_RATIO = 0.5

# MRE-PINN (Ragoza & Batmanghelich, MICCAI 2023) on the BIOQIC FEM box, from its notebooks'
# outputs (shared/physics-notes.md): mean relative MAD, R, contrast of the 20/10/6/4 mm targets.
MRE_PINN = {
    "PINN": {"clean": 0.459, "r": 0.699, "noisy": 0.477, "contrast": (0.509, 0.406, 0.218, 0.048)},
    "AHI": {"clean": 0.521, "r": 0.540, "noisy": 0.904, "contrast": (0.978, 1.036, 0.023, 0.027)},
}
FOUR_TARGET_DIAMETERS_MM = {"2": 20, "3": 10, "4": 6, "5": 4}  # elastic.LAYOUTS order


# --------------------------------------------------------------------------- methods


def pinn_method(name: str) -> str:
    return f"pinn-{name}"


def method_choices() -> list[str]:
    """Every elastic method: a PINN per form (found now), the default PINN, baselines."""
    return [pinn_method(n) for n in lab.pde_forms()] + list(DEFAULT_METHODS)


def methods_of(pde: list[str] | None, methods: list[str] | None) -> list[str]:
    """The methods of a run: ``pinn-<name>`` for each ``pde`` name, then ``methods``
    (default: pinn-auto and the baselines), each once, in that order. Without ``pde`` every
    form runs only when ``methods`` is not given either: ``--methods curl-mdev`` alone runs
    curl-MDEV alone."""
    names = (list(lab.pde_forms()) if methods is None else []) if pde is None else pde
    unknown = [n for n in names if n not in lab.pde_forms()]
    if unknown:
        raise hp.ConfigError(
            f"--pde: unknown form(s) {unknown}; available: {', '.join(lab.pde_forms())}"
        )
    chosen = [pinn_method(n) for n in names] + list(DEFAULT_METHODS if methods is None else methods)
    bad = [m for m in chosen if m not in method_choices()]
    if bad:
        valid = ", ".join(method_choices())
        raise hp.ConfigError(f"--methods: unknown method(s) {bad} for --elastic; valid: {valid}")
    return list(dict.fromkeys(chosen))


def label(method: str) -> str:
    fixed = {
        AUTO: "PINN, library default",
        "ahi": "AHI",
        "ahi-gaussian": "AHI, Gaussian-smoothed",
        "curl-mdev": "curl-MDEV",
    }
    return fixed.get(method) or f"PINN, {method.removeprefix('pinn-')} form"


def _auto_label(method: str, pde: str | None) -> str:
    """The label, naming the form the library's default stood for."""
    return label(method) + (f" (pde {pde})" if method == AUTO and pde else "")


def is_pinn(method: str) -> bool:
    return method.startswith("pinn-")


def _fit_quality(res):
    """The Result's ``fit_quality`` entry (metrics, else facts), or None."""
    for source in (getattr(res, "metrics", None), getattr(res, "facts", None)):
        if isinstance(source, dict) and source.get("fit_quality") is not None:
            return source["fit_quality"]
    return None


def _default_form(cfg, dataset) -> str | None:
    """``pinn-<form>`` that the library's default (``cfg.pde``) stands for on ``dataset``."""
    name = lab.resolve_pde(cfg.pde, dataset.n_comp)
    return pinn_method(name) if name in lab.pde_forms() else None


def run_pinn(method: str, data: list, cfg) -> list[tuple[dict, np.ndarray | None]]:
    """One PINN method on one dataset or, batched, several of one grid (one program):
    [(facts, mu (F, *grid) Pa or None when it failed)] per dataset."""
    pde = {} if method == AUTO else {"pde": method.removeprefix("pinn-")}
    t0 = time.perf_counter()
    try:
        res = hp.invert(data if len(data) > 1 else data[0], cfg, progress=False, **pde)
    except hp.HelmholtzPinnError as err:
        failed = {"error": f"{type(err).__name__}: {err}", "wall_time_s": time.perf_counter() - t0}
        return [(dict(failed), None) for _ in data]
    results = res if isinstance(res, list) else [res]
    out = []
    for r in results:
        m = r.metrics
        facts = {
            "wall_time_s": m["wall_time_s"] / len(data),
            "pde": m.get("pde"),
            "steps": m.get("steps"),
            "retries": m.get("retries"),
            "final_loss": m.get("final_loss"),
            "mu_ref_pa": m.get("mu_ref_pa"),
            "fit_quality": _fit_quality(r),
        }
        if len(data) > 1:
            facts.update(batch_members=len(data), batch_wall_time_s=m["wall_time_s"])
        out.append((facts, r.mu))
    return out


def run_baseline(method: str, dataset, ahi_sigma: float, curl_sigma: float):
    """(facts, mu in Pa or None) of a baseline on one dataset."""
    t0 = time.perf_counter()
    try:
        if method == "curl-mdev":
            if dataset.n_comp != 3:
                raise hp.InputError(
                    f"curl-MDEV needs three displacement components; the file has {dataset.n_comp}"
                )
            mu = hp.curl_mdev(dataset, smoothing="gaussian", sigma=curl_sigma)
            settings = {"smoothing": "gaussian", "sigma_voxels": curl_sigma}
        else:
            smoothing = "gaussian" if method == "ahi-gaussian" else "none"
            mu = hp.baseline(dataset, smoothing=smoothing, sigma=ahi_sigma)
            settings = {"smoothing": smoothing}
            if smoothing == "gaussian":
                settings["sigma_voxels"] = ahi_sigma
    except (hp.HelmholtzPinnError, ValueError) as err:  # documented refusals of bad input
        return {
            "error": f"{type(err).__name__}: {err}",
            "wall_time_s": time.perf_counter() - t0,
        }, None
    return {"wall_time_s": time.perf_counter() - t0, **settings}, mu


def loss_modulus_errors(mu, dataset) -> tuple[float | None, list]:
    """Median over the mask of |G''_est - G''_true| / |G''_true| (G'' = Im mu), pooled
    over frequencies, and the median per frequency. A single map (a baseline) is compared
    with every frequency's truth (G'' = omega eta changes with frequency)."""
    grid = tuple(dataset.grid)
    true = np.asarray(dataset.mu).reshape(-1, *grid)
    pred = np.asarray(mu).reshape(-1, *grid)
    mask = np.asarray(dataset.mask, bool)
    per, pooled = [], []
    for i in range(true.shape[0]):
        err = lab.relative_error_map(pred[min(i, len(pred) - 1)].imag, true[i].imag)[mask]
        pooled.append(err)
        per.append(float(np.median(err)))
    value = float(np.median(np.concatenate(pooled)))
    finite = [v if math.isfinite(v) else None for v in per]
    return (value if math.isfinite(value) else None), finite


# --------------------------------------------------------------------------- files


def read_manifest(folder: Path) -> list[dict]:
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        raise hp.InputError(
            f"--elastic {folder}: no manifest.json there; write the files with "
            "python scripts/elastic_phantoms.py --out DIR"
        )
    return json.loads(path.read_text())


def select(entries: list[dict], args) -> list[dict]:
    """Manifest entries that pass the filters, in study order: set, case, output, noise
    (clean first), seed."""
    chosen = [
        e
        for e in entries
        if (not args.set or e["set"] in args.set)
        and (not args.output or e["output"] in args.output)
        and (not args.case or e["case"] in args.case)
        and (args.noise is None or e["noise_db"] in args.noise)
        and (not args.seeds or e["noise_db"] is None or e["seed"] in args.seeds)
    ]
    cases = list(dict.fromkeys(e["case"] for e in entries))

    def key(e):
        noise = -math.inf if e["noise_db"] is None else e["noise_db"]
        return (SETS.index(e["set"]), cases.index(e["case"]), OUTPUTS.index(e["output"]),
                noise, e["seed"] or 0)  # fmt: skip

    return sorted(chosen, key=key)


def file_info(entry: dict, dataset) -> dict:
    labels, counts = np.unique(np.asarray(dataset.regions)[dataset.mask], return_counts=True)
    layout = (entry.get("settings") or {}).get("layout", "four-target")
    return {
        "file": entry["file"],
        "case": entry["case"],
        "set": entry["set"],
        "output": entry["output"],
        "noise_db": entry["noise_db"],
        "seed": entry.get("seed"),
        "layout": layout if isinstance(layout, str) else "custom",
        "settings": {k: v for k, v in (entry.get("settings") or {}).items() if k != "layout"},
        "shape": list(dataset.grid),
        "spacing_m": [float(h) for h in dataset.spacing],
        "frequencies_hz": [float(f) for f in dataset.frequency],
        "components": int(dataset.n_comp),
        "region_voxels": {str(int(k)): int(c) for k, c in zip(labels, counts, strict=True)},
    }


def cell_row(entry: dict, method: str, facts: dict, mu, dataset, extra: dict) -> dict:
    """The JSON record of one elastic cell: what it ran on, the headline numbers, the rest."""
    row = {
        "file": entry["file"],
        "case": entry["case"],
        "set": entry["set"],
        "output": entry["output"],
        "noise_db": entry["noise_db"],
        "noise": noise_label(entry["noise_db"]),
        "seed": entry.get("seed"),
        "method": method,
        **extra,
        **facts,
    }
    if mu is None:
        return row
    keys = ("median_rel_error_storage", "mean_rel_error_storage", "pearson_r_storage")
    got, (loss, loss_per) = scores(mu, dataset, *keys), loss_modulus_errors(mu, dataset)
    metrics = got.pop("metrics")
    return {**row, **got, "median_rel_error_loss": loss,
            "median_rel_error_loss_per_frequency": loss_per, "metrics": metrics}  # fmt: skip


# --------------------------------------------------------------------------- running


def done_cells(paths: list[Path] | None, load_study) -> set:
    """(file, method) of the cells without an error in earlier logs or JSON files."""
    done = set()
    for p in paths or []:
        for r in load_study(p).get("elastic_results", []):
            if "error" not in r:
                done.add((r["file"], r["method"]))
    return done


def run_elastic(args, cfg, meta: dict, *, load_study, write_report) -> dict:
    """Run the selected elastic cells; print each as a JSON line, save and report as they
    complete (``<out>/accuracy_elastic.json`` / ``.md``; ``write_report(study, path)`` is
    the script's report of both parts). Returns the study."""
    import jax

    folder = Path(args.elastic)
    out = lab.prepare_dir(args.out)
    maps_dir = lab.prepare_dir(out / "elastic_maps")
    methods = methods_of(args.pde, args.methods)
    done = done_cells(args.skip_done, load_study)
    chosen = select(read_manifest(folder), args)
    missing = [e["file"] for e in chosen if not (folder / e["file"]).is_file()]
    if missing:  # e.g. a subset of the files copied to a GPU machine
        print(f"# {len(missing)} selected files of the manifest are not in {folder}: skipped",
              file=sys.stderr)  # fmt: skip
    todo = [
        (e, [m for m in methods if (e["file"], m) not in done])
        for e in chosen
        if e["file"] not in missing
    ]
    todo = [(e, ms) for e, ms in todo if ms][: args.limit_files]
    filters = {k: getattr(args, k) for k in ("set", "output", "case", "seeds", "limit_files")}
    meta["elastic"] = {
        "dir": str(folder),
        "maps_dir": str(maps_dir.resolve()),
        "files": [e["file"] for e, _ in todo],
        "methods": methods,
        "filters": {**filters, "noise_db": args.noise},
        "skipped_done": len(done),
        "missing_files": missing,
        "batch": bool(args.batch),
        "curl_sigma_voxels": args.curl_sigma,
        "time_budget_s": args.time_budget,
    }
    meta["complete"] = False
    study = {
        "meta": meta,
        "elastic_files": {},
        "elastic_results": [],
        "phantoms": {},
        "results": [],
    }
    emit({"meta": meta})
    print(
        f"# {jax.devices()[0]}: {len(todo)} elastic files x up to {len(methods)} methods"
        + (" (batched per case and output)" if args.batch else ""),
        file=sys.stderr,
        flush=True,
    )
    extra = {"quick": bool(args.quick), "config_overrides": meta.get("config_overrides", {})}
    t_start = time.perf_counter()
    groups: dict = {}
    for e, ms in todo:  # one group per grid: a case and an output
        groups.setdefault((e["case"], e["output"]), []).append((e, ms))

    def record(entry, dataset, method, facts, mu):
        row = cell_row(entry, method, facts, mu, dataset, extra)
        study["elastic_results"].append(row)
        emit(row)
        if mu is not None and entry["noise_db"] in FIGURE_NOISE:
            _save_map(maps_dir, entry, method, mu, dataset)
        lab.write_json(out / "accuracy_elastic.json", study)

    def over_budget() -> bool:
        return args.time_budget is not None and time.perf_counter() - t_start > args.time_budget

    fits: dict = {}  # (file, method) -> (facts, mu): this group's PINN fits

    def run(method: str, pairs: list) -> list:
        """(facts, mu) per (entry, dataset): a baseline on each, a PINN method as one
        program for all of them; pinn-auto takes the group's fit of the form it stands for
        when that form was run (the same fit: same settings and seed)."""
        if not is_pinn(method):
            return [run_baseline(method, d, args.ahi_sigma, args.curl_sigma) for _, d in pairs]
        cells = [None] * len(pairs)
        if method == AUTO:
            for i, (e, d) in enumerate(pairs):
                same = _default_form(cfg, d)
                if same and (e["file"], same) in fits:
                    facts, mu = fits[(e["file"], same)]
                    cells[i] = ({**facts, "same_as": same}, mu)
        rest = [i for i, c in enumerate(cells) if c is None]
        if rest:
            for i, cell in zip(
                rest, run_pinn(method, [pairs[i][1] for i in rest], cfg), strict=True
            ):
                cells[i] = fits[(pairs[i][0]["file"], method)] = cell
        return cells

    stopped = False
    started: set = set()  # files with a cell begun
    for (case, output), items in groups.items():
        if stopped or over_budget():
            stopped = True
            break
        loaded = []
        for e, ms in items:
            dataset = hp.load(folder / e["file"])
            info = file_info(e, dataset)
            study["elastic_files"][e["file"]] = info
            emit({"elastic_file": info})
            if e["noise_db"] in FIGURE_NOISE:
                _save_map(maps_dir, e, "truth", dataset.mu, dataset)
            loaded.append((e, ms, dataset))
        # --batch: each method on all files of the group at once; else file by file
        steps = (
            [(m, [(e, d) for e, ms, d in loaded if m in ms]) for m in methods]
            if args.batch
            else [(m, [(e, d)]) for e, ms, d in loaded for m in ms]
        )
        for method, pairs in steps:
            if not pairs:
                continue
            if over_budget() and (args.batch or pairs[0][0]["file"] not in started):
                stopped = True
                break
            started.add(pairs[0][0]["file"])
            for (e, d), (facts, mu) in zip(pairs, run(method, pairs), strict=True):
                record(e, d, method, facts, mu)
        fits.clear()
        if not args.no_figures:
            elastic_figure(study, case, output, [maps_dir], out / "figures")
        write_report(study, out / "accuracy_elastic.md")
    if stopped:
        print(f"# time budget of {args.time_budget:g} s reached: stopped", file=sys.stderr)
        emit({"stopped": {"time_budget_s": args.time_budget}})
    wanted = {(e["file"], m) for e, ms in todo for m in ms}
    meta["complete"] = wanted <= {(r["file"], r["method"]) for r in study["elastic_results"]}
    if meta["complete"]:
        emit({"complete": {"cells": len(study["elastic_results"])}})
    lab.write_json(out / "accuracy_elastic.json", study)
    write_report(study, out / "accuracy_elastic.md")
    return study


# --------------------------------------------------------------------------- figures


def _map_path(maps_dir: Path, file: str) -> Path:
    return Path(maps_dir) / (Path(file).stem + ".npz")


def _save_map(maps_dir: Path, entry: dict, method: str, mu, dataset) -> None:
    """Keep G' (kPa, first frequency, middle z-plane of a volume) for the figures."""
    img = np.asarray(mu).reshape(-1, *dataset.grid)[0].real / 1e3
    if img.ndim == 3:
        img = img[..., img.shape[-1] // 2]
    path = _map_path(maps_dir, entry["file"])
    maps = dict(np.load(path)) if path.exists() else {}
    maps[method] = img.astype(np.float32)
    with open(path, "wb") as f:
        np.savez(f, **maps)


def _load_maps(maps_dirs: list[Path], file: str) -> dict:
    """The maps saved for ``file`` in any of ``maps_dirs`` (a later folder's win)."""
    maps: dict = {}
    for folder in maps_dirs:
        path = _map_path(folder, file)
        if path.exists():
            maps.update(np.load(path))
    return maps


def elastic_figure(study: dict, case: str, output: str, maps_dirs: list[Path], fig_dir: Path):
    """Rows: the clean and -20 dB files of one case and output (lowest seed); columns:
    the truth and each method's G' (kPa). Drawn from the maps saved in ``maps_dirs``
    (several runs' folders: merged)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    infos = [
        i for i in study["elastic_files"].values() if (i["case"], i["output"]) == (case, output)
    ]
    rows = []
    for noise in FIGURE_NOISE:
        same = sorted((i for i in infos if i["noise_db"] == noise), key=lambda i: i["seed"] or 0)
        maps = _load_maps(maps_dirs, same[0]["file"]) if same else {}
        if maps:
            rows.append((same[0], maps))
    if not rows:
        return None
    order = list(dict.fromkeys(r["method"] for r in study["elastic_results"]))
    methods = [m for m in order if any(m in maps for _, maps in rows)]
    errs = {
        (r["file"], r["method"]): r.get("median_rel_error_storage")
        for r in study["elastic_results"]
    }
    truth = rows[0][1].get("truth")
    lo, hi = (float(np.nanmin(truth)), float(np.nanmax(truth))) if truth is not None else (0, 1)
    pad = 0.15 * (hi - lo) if hi > lo else 0.2 * hi
    ncol = 1 + len(methods)
    fig, axes = plt.subplots(len(rows), ncol, figsize=(2.5 * ncol, 2.9 * len(rows)), squeeze=False)
    try:
        for i, (info, maps) in enumerate(rows):
            h = info["spacing_m"]
            extent = (0, info["shape"][0] * h[0] * 1e3, 0, info["shape"][1] * h[1] * 1e3)
            for j, name in enumerate(["truth", *methods]):
                ax = axes[i, j]
                if name not in maps:
                    ax.set_axis_off()
                    continue
                im = ax.imshow(maps[name].T, origin="lower", extent=extent, cmap="viridis",
                               vmin=max(0.0, lo - pad), vmax=hi + pad)  # fmt: skip
                title = "true G'" if name == "truth" else label(name)
                err = errs.get((info["file"], name))
                if err is not None:
                    title += f"\nmedian error {100 * err:.1f} %"
                ax.set_title(f"{title}\n{noise_label(info['noise_db'])}", fontsize=7)
                ax.tick_params(labelsize=6)
                fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=6)
        where = "middle z-plane" if output == "volume" else "slice"
        fig.suptitle(f"{case} ({output}): recovered G' = Re(mu), kPa, {where}; x, y in mm",
                     fontsize=9)  # fmt: skip
        fig.tight_layout()
        path = lab.prepare_dir(fig_dir) / f"accuracy_elastic_{case}_{output}.png"
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------- report


def _row_order(study: dict):
    order = list(dict.fromkeys(r["method"] for r in study.get("elastic_results", [])))

    def key(r):
        noise = -math.inf if r["noise_db"] is None else r["noise_db"]
        return (OUTPUTS.index(r["output"]), noise, r.get("seed") or 0, order.index(r["method"]))

    return key


def _largest(study: dict, file: str, n: int = 2) -> list[str]:
    voxels = study.get("elastic_files", {}).get(file, {}).get("region_voxels", {})
    return sorted((k for k in voxels if int(k) >= 2), key=lambda k: (-voxels[k], int(k)))[:n]


def _ok(value, met) -> str:
    return value if met is None else f"{value} ({'met' if met else '**NOT met**'})"


def _judge_error(limit):
    def judge(r, study, curl):
        e = r.get("median_rel_error_storage")
        return pct(e), e is not None and e <= limit

    return judge


def _judge_r(limit):
    def judge(r, study, curl):
        x = r.get("pearson_r_storage")
        return num(x), x is not None and x >= limit

    return judge


def _judge_contrast(r, study, curl):
    big = _largest(study, r["file"])
    c = [(r.get("contrast_transfer") or {}).get(k) for k in big]
    ok = bool(c) and all(x is not None and x >= CLEAN_MIN_CONTRAST for x in c)
    return " / ".join(pct(x) for x in c) + f" (regions {', '.join(big)})", ok


def _judge_ratio(r, study, curl):
    e, c = r.get("median_rel_error_storage"), curl.get(r["file"])
    if e is None or not c:
        return "curl-MDEV n/a", None
    return f"x{e / c:.2f}", e / c <= NOISY_MAX_RATIO


# short name, noise level of the files judged, judge(row, study, curl errors by file)
TARGETS = (
    ("clean error", None, _judge_error(CLEAN_MAX_ERROR)),
    ("clean R", None, _judge_r(CLEAN_MIN_R)),
    ("clean contrast", None, _judge_contrast),
    ("-20 dB error", NOISY_DB, _judge_error(NOISY_MAX_ERROR)),
    ("-20 dB R", NOISY_DB, _judge_r(NOISY_MIN_R)),
    ("-20 dB vs curl-MDEV", NOISY_DB, _judge_ratio),
)


def elastic_targets(study: dict, set_name: str) -> list[dict]:
    """Per case, output and PINN method of ``set_name``: the six targets of the issue,
    each {"short", "value", "met"}; met None where not run, failed or without a curl-MDEV
    number; a -20 dB target must be met on every -20 dB file (each noise seed)."""
    rows = [r for r in study.get("elastic_results", []) if r["set"] == set_name]
    curl = {
        r["file"]: r.get("median_rel_error_storage") for r in rows if r["method"] == "curl-mdev"
    }
    out = []
    keys = dict.fromkeys(
        (r["case"], r["output"], r["method"]) for r in rows if is_pinn(r["method"])
    )
    for key in keys:
        mine = [r for r in rows if (r["case"], r["output"], r["method"]) == key]
        mine.sort(key=lambda r: r.get("seed") or 0)
        targets = []
        for short, noise_db, judge in TARGETS:
            files = [r for r in mine if r["noise_db"] == noise_db]
            parts = [("failed", None) if "error" in r else judge(r, study, curl) for r in files]
            seeds = [f" (seed {r['seed']})" if len(files) > 1 else "" for r in files]
            mets = [m for _, m in parts]
            targets.append(
                {
                    "short": short,
                    "value": ", ".join(v + s for (v, _), s in zip(parts, seeds, strict=True))
                    or "not run",
                    "met": None if not files or None in mets else all(mets),
                }
            )
        pde = next((r.get("pde") for r in mine if r.get("pde")), None)
        out.append(
            dict(zip(("case", "output", "method"), key, strict=True), pde=pde, targets=targets)
        )
    return out


def _targets_table(study: dict, set_name: str) -> list[str]:
    rows = elastic_targets(study, set_name)
    if not rows:
        return ["No PINN results on this set."]
    head = [
        "case", "output", "PINN",
        f"clean: median G' error <= {pct(CLEAN_MAX_ERROR, 0)}",
        f"clean: R >= {CLEAN_MIN_R}",
        f"clean: contrast of the two largest targets >= {pct(CLEAN_MIN_CONTRAST, 0)}",
        f"-20 dB: median G' error <= {pct(NOISY_MAX_ERROR, 0)}",
        f"-20 dB: R >= {NOISY_MIN_R}",
        f"-20 dB: error <= {NOISY_MAX_RATIO}x curl-MDEV's on the same file",
        "met",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        t = row["targets"]
        judged = [x for x in t if x["met"] is not None]
        count = f"{sum(x['met'] for x in judged)} of {len(judged)}"
        if len(judged) < len(t):
            count += f" ({len(t) - len(judged)} not run or failed)"
        cells = [row["case"], row["output"], _auto_label(row["method"], row["pde"])]
        cells += [_ok(x["value"], x["met"]) for x in t] + [count]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _fit_quality_text(fq) -> str:
    """The library's checks (a list of {name, passed, skipped, ...}) as "passed" or the
    names of the failed ones; any other form as it is."""
    if fq is None:
        return ""
    if isinstance(fq, list) and all(isinstance(c, dict) and "passed" in c for c in fq):
        run = [c for c in fq if not c.get("skipped")]
        failed = [str(c.get("name", "?")) for c in run if not c["passed"]]
        text = f"failed: {', '.join(failed)}" if failed else "passed"
        skipped = len(fq) - len(run)
        return text + (f" ({skipped} skipped)" if skipped else "")
    if isinstance(fq, (int, float)):
        return num(fq, "{:.3g}")
    return str(fq)


def _case_table(study: dict, rows: list[dict]) -> list[str]:
    labels = sorted({k for r in rows for k in (r.get("contrast_transfer") or {})}, key=int)
    head = ["output", "noise", "seed", "method", "median error G'", "R"]
    head += [f"contrast {k}" for k in labels]
    head += ["median error G''", "wall s", "fit quality"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in sorted(rows, key=_row_order(study)):
        cells = [r["output"], r["noise"], "" if r.get("seed") is None else str(r["seed"])]
        name = _auto_label(r["method"], r.get("pde"))
        if r.get("same_as"):
            name += f" (= {r['same_as']}'s fit)"
        cells.append(name + (" (quick)" if r.get("quick") else ""))
        if "error" in r:
            cells += [f"failed: {r['error']}", ""] + [""] * len(labels) + [""]
        else:
            ct = r.get("contrast_transfer") or {}
            cells += [pct(r.get("median_rel_error_storage")), num(r.get("pearson_r_storage"))]
            cells += [pct(ct.get(k), 0) for k in labels]
            cells.append(pct(r.get("median_rel_error_loss")))
        wall = seconds(r.get("wall_time_s"))
        if r.get("batch_members"):
            wall += f" (batch of {r['batch_members']})"
        cells += [wall, _fit_quality_text(r.get("fit_quality"))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _runs_lines(study: dict) -> list[str]:
    runs = [m for m in study.get("meta", {}).get("runs", [study.get("meta", {})]) if "elastic" in m]
    lines = []
    for m in runs:
        mach = m.get("machine", {})
        cfg = m.get("config", {})
        el = m["elastic"]
        lines.append(
            f"- {m.get('date', 'n/a')}: `{m.get('command', 'n/a')}` on "
            f"{mach.get('device_kind', '?')} ({mach.get('backend', '?')}, JAX "
            f"{mach.get('jax_version', '?')}); {len(el.get('files', []))} files, methods "
            f"{', '.join(el.get('methods', []))}; PINN steps {cfg.get('steps', '?')}, pde default "
            f"{cfg.get('pde', '?')}, overrides `{json.dumps(m.get('config_overrides', {}))}`"
            + ("; batched per case and output" if el.get("batch") else "")
            + (
                f"; {len(el['missing_files'])} selected files absent (skipped)"
                if el.get("missing_files")
                else ""
            )
            + ("; **--quick smoke run: not a measurement**" if m.get("quick") else "")
            + ("" if m.get("complete", True) else "; incomplete")
        )
    return lines


def _comparison(study: dict) -> list[str]:
    head = ["method", "data", "G' error clean", "mean rel. error clean (ours)", "R clean",
            "G' error -20 dB", "contrast 20 / 10 / 6 / 4 mm (clean)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, v in MRE_PINN.items():
        lines.append(
            f"| MRE-PINN's {name} (published) | BIOQIC FEM box | {pct(v['clean'])} "
            f"(mean relative MAD) | | {num(v['r'])} | {pct(v['noisy'])} (mean relative MAD) | "
            + " / ".join(pct(c) for c in v["contrast"])
            + " |"
        )
    files = study.get("elastic_files", {})
    rows = [
        r
        for r in study.get("elastic_results", [])
        if files.get(r["file"], {}).get("layout") == "four-target"
    ]
    keys = dict.fromkeys((r["set"], r["case"], r["output"], r["method"]) for r in rows)
    for set_name, case, output, method in keys:
        mine = [
            r
            for r in rows
            if (r["set"], r["case"], r["output"], r["method"]) == (set_name, case, output, method)
        ]
        clean = next((r for r in mine if r["noise_db"] is None and "error" not in r), None)
        noisy = [r for r in mine if r["noise_db"] == NOISY_DB and "error" not in r]
        ct = (clean or {}).get("contrast_transfer") or {}
        lines.append(
            f"| {label(method)} | {case}, {output} ({set_name}) | "
            f"{pct((clean or {}).get('median_rel_error_storage'))} (median) | "
            f"{pct((clean or {}).get('mean_rel_error_storage'))} | "
            f"{num((clean or {}).get('pearson_r_storage'))} | "
            + (", ".join(pct(r.get("median_rel_error_storage")) for r in noisy) or "n/a")
            + (" (median)" if noisy else "")
            + " | "
            + " / ".join(pct(ct.get(k)) for k in FOUR_TARGET_DIAMETERS_MM)
            + " |"
        )
    if not keys:
        lines += ["", "No four-target files among these results."]
    return lines


COMPARABILITY = """\
How comparable the setups are. The geometry, moduli and frequencies match the BIOQIC box
as described in MRE-PINN's paper, but the data are not the same files: ours come from our
own FEM solver with our boundary conditions, drive and noise, theirs from BIOQIC's
simulation, and the metrics differ (below). The comparison shows the order of magnitude
(our mean relative G' error on the clean four-target slices, 9-10 %, against their
45.9 % mean relative deviation), not a ranking on
equal terms; running both codes on one file is the fair test and was not done:

- Ours: a slab of 80 x 100 x 10 mm sampled at 1 mm voxels (80 x 100 x 10; the held-out
  `four-target-20mm` case is 20 mm thick), cylinders through the slab of radius 10 / 5 / 3 /
  2 mm, i.e. 20 / 10 / 6 / 4 mm diameter, at G' = 10 kPa in a 3 kPa background, viscosity
  1 Pa s (G'' = omega eta), lambda 1 MPa, rho 1000 kg/m^3, 60 / 80 / 100 Hz (held-out also
  50 / 70 / 90 Hz), all three displacement components; the time-harmonic Navier-Cauchy
  equation solved by P2 finite elements (scikit-fem), the y = 0 face driven rigidly with
  amplitudes (1.0, 0.3, 0.1), the other faces traction-free; noise complex Gaussian at the
  given power ratio to the mean power of all components per frequency.
- MRE-PINN's BIOQIC box: 80 x 100 x 10 voxels at 1 mm, background 3 kPa, four cylindrical
  10 kPa targets of radius 10 / 5 / 3 / 2 mm, viscosity 1 Pa s, 50-100 Hz. Their forward
  model, boundary conditions, drive and noise model are not verified here. MRE-PINN uses
  x-y derivatives only, fits one model per frequency and sets the mu output scale from the
  ground truth (we estimate it from the data).
- The metrics differ: MRE-PINN reports the mean relative MAD (mean absolute deviation,
  relative), we report the median over the voxels of |G'_est - G'_true| / G'_true (the
  column "mean rel. error" gives our mean of the same ratio, closer to but not the same as
  theirs). Contrast transfer is defined here from region medians (recovered over true
  contrast against the background); their definition is not verified here."""


def report_sections(study: dict) -> list[str]:
    """The Markdown of the elastic part (empty when the study has no elastic cells)."""
    rows = study.get("elastic_results", [])
    if not rows:
        return []
    files = study.get("elastic_files", {})
    meta = study.get("meta", {})
    lines = [
        "",
        "## Elastic FEM phantoms (3 components, Navier-Cauchy)",
        "",
        "Files of `scripts/elastic_phantoms.py` (3-D viscoelastic FEM, all three displacement "
        "components; `volume`: the whole slab, `slice`: its middle z-plane). Per file and "
        "method: median relative error of G' = Re(mu) over the mask, Pearson R of G', contrast "
        "transfer of each target region (region medians; 100 % perfect, 0 % flat), median "
        "relative error of G'' = Im(mu) against the true G'' (= omega eta), pooled over the "
        "frequencies (a baseline's single map is compared with each frequency's G''), wall "
        "time (PINN: preparation, training with its compilation, prediction; batched fits: the "
        "batch's time over its members; a run that shared its device with other processes, "
        "as in a shared device run, is slower than one fit alone: single-fit times "
        "are in docs/performance.md) and the fit's `fit_quality` where the library reports "
        "it. The tuning set is where the defaults were chosen: its numbers are not evidence "
        "of accuracy on new data; the held-out set is. The -20 dB ratio target is taken "
        "against curl-MDEV (Gaussian sigma "
        f"{(meta.get('elastic') or {}).get('curl_sigma_voxels', 'n/a')} voxels) on the same file.",
        "",
        "Runs:",
        "",
        *_runs_lines(study),
    ]
    if not meta.get("complete", True):
        lines += ["", "**Incomplete: only the cells below finished.**"]
    for set_name in ("held-out", "tuning"):
        if any(r["set"] == set_name for r in rows):
            title = (
                "Held-out set: the issue's targets"
                if set_name == "held-out"
                else "Tuning set (defaults chosen on it): the same targets, not evidence"
            )
            lines += ["", f"### {title}", "", *_targets_table(study, set_name)]
    for set_name in ("held-out", "tuning"):
        cases = list(dict.fromkeys(r["case"] for r in rows if r["set"] == set_name))
        for case in cases:
            mine = [r for r in rows if r["case"] == case]
            lines += ["", f"### {case}: {SET_LABELS[set_name]}", ""]
            for output in OUTPUTS:
                info = next(
                    (i for i in files.values() if (i["case"], i["output"]) == (case, output)), None
                )
                if info is None:
                    continue
                voxels = info["region_voxels"]
                lines.append(
                    f"- {output}: {' x '.join(map(str, info['shape']))} voxels of "
                    f"{' x '.join(f'{h * 1e3:g}' for h in info['spacing_m'])} mm, "
                    f"{', '.join(f'{f:g}' for f in info['frequencies_hz'])} Hz, "
                    f"{info['components']} components; target regions (voxels): "
                    + (", ".join(f"{k} ({voxels[k]})" for k in voxels if int(k) >= 2) or "none")
                    + (
                        f"; simulated with `{json.dumps(info['settings'])}`"
                        if info.get("settings")
                        else ""
                    )
                    + f"; figure `figures/accuracy_elastic_{case}_{output}.png`"
                )
            lines += ["", *_case_table(study, mine)]
    lines += [
        "",
        "### Beside MRE-PINN's published figures",
        "",
        "MRE-PINN (Ragoza & Batmanghelich, MICCAI 2023) on the BIOQIC FEM box, from its "
        "notebooks' outputs, beside ours on the four-target files (our regions 2 / 3 / 4 / 5 "
        "are the 20 / 10 / 6 / 4 mm targets). Not the same data nor the same metric: see "
        "below.",
        "",
        *_comparison(study),
        "",
        COMPARABILITY,
    ]
    return lines
