"""The data-space sweep: the PINN's defaults against the classical maps across what
scanners acquire (issue "Every dataset a scanner makes").

Members span voxel sizes of 1-3.5 mm, 6-20 voxels per shortest shear wavelength, grids of
24 x 24 to 128 x 128 and 1-48 slices, 1, 2 and 3 components (one of them the
through-plane component alone, as routine 60 Hz liver MRE), 1-3 frequencies, Voigt and
power-law tissue, clean, -20 dB and -10 dB. Three-component members are elastic FEM
organs (``helmholtz_pinn.forward.clinical``: a CPU's sparse LU, seconds each at these
sizes); one- and two-component members and the large grids are scalar finite-difference
fields (``helmholtz_pinn.forward.phantoms``; a volume is the 2-D field extruded with a
through-plane tilt). Tuning and held-out members differ in geometry (target places and
sizes, organ seed, drivers), law parameters and noise seed.

    python scripts/sweep.py simulate --quick --data D            # CPU: the datasets
    python scripts/sweep.py run --quick --data D --records R.jsonl   # GPU, ~8 minutes
    python scripts/sweep.py run --split heldout --records R.jsonl [--arms defaults rules]
    python scripts/sweep.py run --tiny --records R.jsonl         # CPU, seconds (the test)
    python scripts/sweep.py report R.jsonl                       # markdown, per class
    python scripts/sweep.py list [--quick]                       # the members

``run`` appends one JSON line per (member, method): G' and G'' median relative errors,
R, the contrast of each target, the checks that fired (the fit's own and the data-space
checks of ``assess.fit_checks`` computed here from the data), the law record, the
wavelength estimated from u against the truth's, and seconds. Methods: the PINN arms
``defaults`` (the library as it is), ``rules`` (every rule of ``fit.defaults`` applied as
explicit settings) and ``set:JSON`` (any Config overrides), and the baselines
``ahi-smoothed`` and ``curl-mdev`` (three components) on the same file.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import study_report

import helmholtz_pinn as hp
from helmholtz_pinn import lab

pct = functools.partial(study_report.pct, missing="-")  # "-": no value to report

RHO = 1000.0
NOISES = (None, -20.0, -10.0)
# the tiny mode's fit: seconds on a CPU (a smoke run, not a measurement)
TINY_FIT = dict(
    steps=60, sync_interval=20, pde_warmup=20, width=16, n_features=8, mu_width=8,
    mu_depth=1, batch_size=64, mu_model="voigt", lbfgs_steps=0,
)  # fmt: skip


# what a record keeps of the fit's plan: the settings the data decided and their rules
PLAN_KEYS = (
    "steps", "networks", "batch_size", "learning_rate", "sigma_factor_u",
    "sigma_factor_u_rule", "decided", "fit_size_rule", "tf32_steps", "float32_algorithm",
    "pde_weight", "pde_weight_rule",
)  # fmt: skip


class Member(NamedTuple):
    """One dataset of the sweep. ``kind``: "organ" (elastic FEM, three components;
    ``components`` "xyz", "xy" or "z" keep those of them; ``slice`` its middle z-slice) or
    "scalar" (finite differences, ``components`` 1 or 2 drives; ``slices`` 0 for 2-D, else
    an extruded volume). ``voxels`` per shortest wavelength of the background at the
    highest frequency; ``law`` "voigt" or "springpot"; ``noise_db`` None for clean."""

    name: str
    split: str
    kind: str
    voxel_mm: float
    voxels: float
    grid: tuple[int, int]
    slices: int
    components: str
    frequencies: tuple[float, ...]
    law: str
    noise_db: float | None
    seed: int
    slice: bool = False
    fit_frequencies: tuple[float, ...] | None = None
    max_dofs: int = 100_000  # organs: the FEM's limit (5 P2 elements per wavelength below it)

    @property
    def cls(self) -> str:
        """The class of the per-class table: geometry, components, noise."""
        if self.kind == "organ":
            geometry = "slice of 3-D motion" if self.slice else "volume"
        else:
            geometry = "scalar 2-D" if self.slices == 0 else "scalar volume"
        if len(self.fit_frequencies or self.frequencies) == 1:
            geometry += ", one frequency"
        noise = "clean" if self.noise_db is None else f"{self.noise_db:g} dB"
        comps = {"xyz": "3", "xy": "2 in-plane", "z": "1 through-plane"}.get(
            self.components, self.components
        )
        return f"{geometry}, {comps} comp., {noise}"


def _modulus(voxels: float, voxel_mm: float, f_max: float) -> float:
    """|mu| (Pa) of the background whose wavelength at f_max is ``voxels`` voxels."""
    return RHO * (voxels * voxel_mm * 1e-3 * f_max) ** 2


def organ_case(m: Member):
    """The member's ClinicalCase: an organ filling most of the box, a stiff and a soft
    sphere placed by the seed, two drivers, a background gradient."""

    rng = np.random.default_rng(m.seed)
    h, f_max = m.voxel_mm * 1e-3, max(m.frequencies)
    size = _modulus(m.voxels, m.voxel_mm, f_max)
    if m.law == "voigt":
        eta = 1.0 + rng.random()
        background = lab.Voigt(math.sqrt(size**2 - (2 * math.pi * f_max * eta) ** 2), eta)
    else:
        alpha = 0.15 + 0.15 * rng.random()
        background = lab.Springpot(size * (50.0 / f_max) ** alpha, alpha)
    extent = np.array([*m.grid, m.slices]) * h
    small = float(extent[:2].min())
    room = float(extent[2]) / 2 - 1.5 * h  # a sphere's radius that fits the slab in z
    law = background._replace  # targets: the background's law, scaled
    stiff = law(**{"storage" if m.law == "voigt" else "modulus": 2.2 * background[0]})
    soft = law(**{"storage" if m.law == "voigt" else "modulus": 0.7 * background[0]})
    centres = [(0.33, 0.36), (0.66, 0.64)]
    if rng.random() < 0.5:
        centres = [(x, 1 - y) for x, y in centres]
    targets = (
        lab.sphere((*centres[0], 0.5), min(0.14 * small, room), stiff),
        lab.sphere((*centres[1], 0.5), min(0.11 * small, room), soft),
    )
    faces = [("y0", "x1"), ("x0", "y1"), ("y1", "z0")][m.seed % 3]
    drivers = tuple(
        lab.Driver(
            face, (0.5, 0.5), 0.18 * small, tuple(rng.uniform(0.2, 1.0, 3)), rng.uniform(0, 3)
        )
        for face in faces
    )
    return lab.ClinicalCase(
        description=m.name,
        shape=(*m.grid, m.slices),
        spacing=h,
        frequencies=m.frequencies,
        background=background,
        targets=targets,
        organ=lab.Organ(tuple((extent / 2 - 1.5 * h) / 1.06), roughness=0.06, seed=m.seed),
        drivers=drivers,
        gradient=tuple(float(g) for g in rng.uniform(-0.2, 0.2, 3) * (1, 1, 0)),
        seed=m.seed,
        elements_per_wavelength=5.0,
        max_dofs=m.max_dofs,
    )


def scalar_phantom(m: Member):
    """Two disks (stiff and soft) placed by the seed in Voigt or power-law tissue."""

    rng = np.random.default_rng(m.seed)
    h, f_max = m.voxel_mm * 1e-3, max(m.frequencies)
    size = _modulus(m.voxels, m.voxel_mm, f_max)
    small = min(m.grid) * h
    cx = rng.uniform(0.3, 0.36)
    centres = ((cx, 0.34), (1 - cx, 0.66))
    radii = (0.15 * small, 0.1 * small)
    if m.law == "voigt":
        eta = 1.0 + rng.random()
        g = math.sqrt(size**2 - (2 * math.pi * f_max * eta) ** 2)
        return lab.four_target(
            m.grid, h, g, 2.2 * g, radii, centres, viscosity=eta, rho=RHO
        )  # fmt: skip
    alpha = 0.15 + 0.15 * rng.random()
    g = size * math.cos(alpha * math.pi / 2) * (50.0 / f_max) ** alpha
    flat = lab.four_target(m.grid, h, g, 2.2 * g, radii, centres, viscosity=0.0, rho=RHO)
    return lab.as_springpot(flat, alpha)


_VOLUMES: dict = {}  # clean organ volumes by geometry: members that share one reuse it


def simulate(m: Member):
    """The member's Dataset: noise drawn from its seed (organs: inside the organ, one level
    for every component, before the components and frequencies are picked, as a scanner)."""

    if m.kind == "scalar":
        data = lab.simulate_fd(
            scalar_phantom(m), m.frequencies, int(m.components), nz=m.slices or None
        )
        return dataclasses.replace(data, u=lab.add_noise(data.u, m.noise_db, m.seed))
    key = (m.voxel_mm, m.voxels, m.grid, m.slices, m.frequencies, m.law, m.seed, m.max_dofs)
    if key not in _VOLUMES:
        _VOLUMES[key] = hp.simulate_clinical(organ_case(m))
    data = _VOLUMES[key]
    if m.noise_db is not None:
        data = lab.shared_noise(data, m.noise_db, m.seed)
    if m.slice:
        data = lab.middle_slice(data)
    f = [i for i, x in enumerate(data.frequency) if x in (m.fit_frequencies or m.frequencies)]
    keep = {"xyz": [0, 1, 2], "xy": [0, 1], "z": [2]}[m.components]
    mu = None if data.mu is None else np.asarray(data.mu)[f]
    return dataclasses.replace(data, u=data.u[f][:, keep], frequency=data.frequency[f], mu=mu)


def _geometry(kind, mm, voxels, grid, slices, comps, freqs, law, seed, **more) -> dict:
    return dict(
        kind=kind, voxel_mm=mm, voxels=voxels, grid=grid, slices=slices, components=comps,
        frequencies=freqs, law=law, seed=seed, **more,
    )  # fmt: skip


F3, F2 = (40.0, 50.0, 60.0), (50.0, 60.0)
# name -> geometry; the seed offset places targets, organ and drivers (tuning: 100 +,
# held-out: 200 +) and draws the law's parameters and the noise
GEOMETRIES = {
    # three-component organs: liver-like coarse, brain-like finer, coarser and finer still
    "liver": _geometry("organ", 3.0, 8, (24, 24), 10, "xyz", F3, "springpot", 1),
    "brain": _geometry("organ", 1.5, 13, (32, 32), 14, "xyz", (30.0, 45.0, 60.0), "voigt", 2),
    "coarse": _geometry("organ", 3.5, 6, (20, 20), 8, "xyz", F2, "voigt", 3),
    "fine": _geometry("organ", 1.0, 20, (40, 40), 12, "xyz", (80.0, 100.0), "springpot", 4),
    # slices of 3-D motion; routine liver MRE (the through-plane component at 60 Hz)
    "liver-slice": _geometry("organ", 3.0, 8, (24, 24), 10, "xyz", F3, "springpot", 1, slice=True),
    "brain-slice": _geometry(
        "organ", 1.5, 13, (32, 32), 14, "xyz", (30.0, 45.0, 60.0), "voigt", 2, slice=True
    ),
    "routine": _geometry(
        "organ", 3.0, 8, (24, 24), 10, "z", F3, "springpot", 1, fit_frequencies=(60.0,)
    ),
    "inplane": _geometry("organ", 2.0, 11, (28, 28), 10, "xy", F2, "voigt", 6),
    # scalar fields: the grid range (24 to 128 voxels) and the slice counts (1: the 2-D
    # fields, a Dataset needs 3 along every axis of a volume; 3 to 48)
    "plane24": _geometry("scalar", 3.5, 6, (24, 24), 0, "1", (60.0,), "voigt", 7),
    "plane64": _geometry("scalar", 2.0, 12, (64, 64), 0, "2", F3, "springpot", 8),
    "plane128": _geometry("scalar", 1.0, 20, (128, 128), 0, "2", (60.0, 80.0, 100.0), "voigt", 9),
    "stack3": _geometry("scalar", 2.5, 9, (48, 48), 3, "1", F2, "springpot", 10),
    "stack48": _geometry("scalar", 1.5, 16, (64, 64), 48, "2", (40.0, 60.0), "voigt", 11),
}
TINY = {
    "tiny-plane": (_geometry("scalar", 2.0, 8, (16, 16), 0, "1", (60.0,), "voigt", 1), -20.0),
    "tiny-stack": (_geometry("scalar", 2.0, 10, (16, 16), 4, "2", F2, "springpot", 2), None),
    "tiny-organ": (
        _geometry("organ", 3.0, 7, (14, 14), 8, "xyz", (60.0,), "voigt", 3, max_dofs=5000),
        None,
    ),
}
QUICK = ("liver-20dB", "liver-clean", "liver-slice-clean", "routine-clean", "coarse-20dB")
QUICK += ("plane24-10dB",)


def members(mode: str = "full") -> list[Member]:
    """The sweep (``full``: every geometry clean, at -20 dB and at -10 dB, tuning and
    held-out), its GPU subset (``quick``: held-out members of the failure classes) or
    the CPU smoke set (``tiny``)."""
    if mode == "tiny":
        return [Member(name, "heldout", noise_db=n, **g) for name, (g, n) in TINY.items()]
    out = []
    for split, offset in (("tuning", 100), ("heldout", 200)):
        for noise in NOISES:
            tag = "clean" if noise is None else f"{-noise:g}dB"
            for name, g in GEOMETRIES.items():
                member = Member(f"{split}-{name}-{tag}", split, noise_db=noise, **g)
                out.append(member._replace(seed=offset + g["seed"]))
    if mode == "quick":
        out = [m for m in out if m.name in {f"heldout-{q}" for q in QUICK}]
    return out


# --------------------------------------------------------------------------- fits


def _true_voxels(data) -> float:
    """Voxels per shortest wavelength of the truth's median |mu| (the highest frequency)."""
    mu = np.asarray(data.mu).reshape(-1, *data.grid)[-1]
    lam = math.sqrt(float(np.median(np.abs(mu[data.mask]))) / data.rho) / max(data.frequency)
    return lam / float(np.mean(data.spacing[:2]))


def fit(method: str, data, tiny: bool) -> tuple[dict, list[str], float]:
    """(metrics, failed checks, seconds) of one method on ``data``."""

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method in ("ahi-smoothed", "curl-mdev"):
            if method == "ahi-smoothed":
                mu = hp.baseline(data, smoothing="gaussian")
            else:
                mu = hp.curl_mdev(data)
            return hp.evaluate(mu, data), [], time.perf_counter() - t0
        settings = dict(TINY_FIT) if tiny else {}
        if method == "rules":
            pde = "navier" if data.n_comp == 3 else "hetero"
            rules = lab.data_defaults(lab.data_facts_of(data), pde)
            settings.update({**lab.default_overrides(rules), **(TINY_FIT if tiny else {})})
            proposals = [f"{k}: {r.rule}" for k, r in rules.items() if not r.backed]
        elif method.startswith("set:"):
            settings.update(json.loads(method[4:]))
        res = hp.invert(data, progress=False, **settings)
    facts = res.metrics
    _score_mean_of_laws(res, data)
    if method == "rules":
        facts["proposals_applied"] = proposals
    # the checks as the tool runs them (fit_quality holds the data-space checks too, with
    # the run's own settings: the small fit's limits among them)
    failed = {c["name"] for c in facts.get("fit_quality", []) if not c["passed"]}
    return facts, sorted(failed), time.perf_counter() - t0


def _score_mean_of_laws(res, data) -> None:
    """Where both laws were fitted and scored (``law.other``), the accuracy of the mean of
    the two laws' per-frequency maps as ``law.mean`` (G' and G'' errors, R, contrast): a
    candidate map for an undetermined law, measured, not what the tool writes."""
    law = res.metrics.get("law") or {}
    if not res.others or "other" not in law or len(res.others) != 1:
        return
    (other,) = res.others.values()
    mean = 0.5 * (np.asarray(res.mu) + np.asarray(other))
    known = hp.evaluate(mean, data, margin=res.metrics.get("metric_margin", 0))
    law["mean"] = {k: known[k] for k in law["other"] if k in known}  # as law.other scores


def record(m: Member, data, method: str, facts: dict, failed: list[str], seconds: float) -> dict:

    est = lab.estimate_wavelength(data).shortest_voxels
    return {
        "member": m.name, "class": m.cls, "split": m.split, "method": method,
        "member_facts": {**m._asdict(), "grid": list(m.grid)},
        "voxels_true": round(_true_voxels(data), 2), "voxels_from_u": round(est, 2),
        "storage": facts.get("median_rel_error_storage"),
        "loss": facts.get("median_rel_error_loss"), "r": facts.get("pearson_r_storage"),
        "contrast": facts.get("contrast_transfer"), "law": facts.get("law"),
        "law_spread": facts.get("law_spread"), "checks_failed": failed,
        "steps": facts.get("steps"), "seconds": round(seconds, 1), "error": facts.get("error"),
        "proposals_applied": facts.get("proposals_applied"),
        "plan": {k: (facts.get("plan") or {}).get(k) for k in PLAN_KEYS},
        "check_values": {
            c["name"]: [c.get("value"), c.get("threshold")]
            for c in facts.get("fit_quality", []) if not c.get("skipped")
        },
    }  # fmt: skip


def _chosen(args) -> list[Member]:
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    chosen = [m for m in members(mode) if args.split in ("all", m.split)]
    return [m for m in chosen if not args.members or m.name in args.members]


def _dataset(m: Member, cache: Path | None):
    """The member's Dataset, from the ``cache`` folder where it is there, else simulated
    (and written there)."""
    t0 = time.perf_counter()
    path = None if cache is None else cache / f"{m.name}.npz"
    if path is not None and path.exists():
        return hp.load(path)
    data = simulate(m)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        hp.save(data, path)
    print(f"{m.name}: {data.u.shape} simulated in {time.perf_counter() - t0:.0f} s", flush=True)
    return data


def simulate_all(args) -> int:
    """Write the members' datasets into ``--data`` (a CPU job; ``run`` then reads them)."""
    for m in _chosen(args):
        _dataset(m, Path(args.data))
    return 0


def run(args) -> int:
    methods = [*args.arms, *(f"set:{s}" for s in args.set), *args.baselines]
    cache = Path(args.data) if args.data else None
    with open(args.records, "a") as sink:
        for m in _chosen(args):
            try:
                data = _dataset(m, cache)
            except hp.HelmholtzPinnError as err:  # a member the simulator refuses: said, skipped
                print(f"{m.name}: not simulated: {err}", flush=True)
                continue
            for method in methods:
                if method == "curl-mdev" and data.n_comp != 3:
                    continue
                try:
                    facts, failed, seconds = fit(method, data, args.tiny)
                except hp.HelmholtzPinnError as err:  # the package's refusal, recorded
                    facts, failed, seconds = {"error": str(err)}, [], 0.0
                row = record(m, data, method, facts, failed, seconds)
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                print(summary(row), flush=True)
    return 0


# --------------------------------------------------------------------------- report


def summary(row: dict) -> str:
    contrast = " / ".join(f"{v:.2f}" for v in (row["contrast"] or {}).values() if v is not None)
    r = "-" if row["r"] is None else f"{row['r']:.3f}"
    return (
        f"{row['member']:<30} {row['method']:<14} G' {pct(row['storage']):>8} G'' "
        f"{pct(row['loss']):>8} R {r} contrast {contrast or '-'} voxels/lambda "
        f"{row['voxels_true']} (u: {row['voxels_from_u']}) {row['seconds']} s "
        f"{row['checks_failed'] or ''} {row.get('error') or ''}"
    )


def classes(rows: list[dict], method: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["method"] == method and r["storage"] is not None:
            out.setdefault(r["class"], []).append(r)
    return out


def flag_rates(rows: list[dict]) -> dict:
    """Over PINN rows: the far-off members (G' above twice their class median or above
    15 %) and how many a check flagged; the good ones (below the class median) and how
    many were warned."""
    far = flagged = good = warned = 0
    for group in rows:
        median = float(np.median([r["storage"] for r in group]))
        for r in group:
            if r["storage"] > 2 * median or r["storage"] > 0.15:
                far += 1
                flagged += bool(r["checks_failed"])
            elif r["storage"] < median:
                good += 1
                warned += bool(r["checks_failed"])
    return dict(far=far, far_flagged=flagged, good=good, good_warned=warned)


def classical_rates(rows: list[dict], base: dict) -> dict:
    """Over PINN rows: the members whose G' error is above the better of the classical
    maps run on the same file (``base``: (member, method) -> row), how many of those a
    check flagged, and the silent ones by name; members with no classical map are left
    out of ``of``."""
    of, worse, silent = 0, 0, []
    for r in rows:
        maps = [
            base.get((r["member"], m), {}).get("storage") for m in ("ahi-smoothed", "curl-mdev")
        ]
        maps = [m for m in maps if m is not None]
        if not maps:
            continue
        of += 1
        if r["storage"] > min(maps):
            worse += 1
            if not r["checks_failed"]:
                silent.append(r["member"])
    return dict(of=of, worse=worse, worse_flagged=worse - len(silent), silent=silent)


def law_rates(rows: list[dict]) -> dict:
    """Over PINN rows that chose between laws (``law.determined`` recorded): how many
    kept a law other than the member's tissue law, and how many of those said the data
    determined it."""
    judged = [r for r in rows if (r.get("law") or {}).get("determined") is not None]
    wrong = [r for r in judged if r["law"]["mu_model"] != r["member_facts"]["law"]]
    told = sum(bool(r["law"]["determined"]) for r in wrong)
    return dict(judged=len(judged), wrong=len(wrong), wrong_determined=told)


def other_map_rates(rows: list[dict]) -> dict:
    """Over PINN rows where both laws were fitted and the other law's map was scored
    (``law.other``): how often the kept map's G' error is the lower, and the points of
    G' error the kept maps and the better of each pair sum to."""
    pairs = [
        (r["storage"], r["law"]["other"]["median_rel_error_storage"])
        for r in rows
        if "median_rel_error_storage" in ((r.get("law") or {}).get("other") or {})
    ]
    return dict(
        pairs=len(pairs),
        kept_better=sum(kept <= other for kept, other in pairs),
        kept_sum=100 * sum(kept for kept, _ in pairs),
        best_sum=100 * sum(min(pair) for pair in pairs),
    )


def report(args) -> int:
    rows = [json.loads(line) for p in args.records for line in Path(p).read_text().splitlines()]
    pinn = sorted({r["method"] for r in rows} - {"ahi-smoothed", "curl-mdev"})
    base = {(r["member"], r["method"]): r for r in rows}
    for method in pinn:
        groups = classes(rows, method)
        print(f"\n### {method}\n")
        head = (
            "class | members | G' median (range) | R | contrast | flagged | AHI G' | curl-MDEV G'"
        )
        print(f"| {head} |")
        print("|---|---|---|---|---|---|---|---|")
        for cls, group in sorted(groups.items()):
            err = [r["storage"] for r in group]
            rs = [r["r"] for r in group if r["r"] is not None]
            con = [v for r in group for v in (r["contrast"] or {}).values() if v is not None]
            ahi = [base.get((r["member"], "ahi-smoothed"), {}).get("storage") for r in group]
            curl = [base.get((r["member"], "curl-mdev"), {}).get("storage") for r in group]
            fired = sum(bool(r["checks_failed"]) for r in group)
            print(
                f"| {cls} | {len(group)} | {pct(float(np.median(err)))} ({pct(min(err))}-"
                f"{pct(max(err))}) | {np.median(rs) if rs else float('nan'):.2f} | "
                f"{np.median(con) if con else float('nan'):.2f} | {fired}/{len(group)} | "
                f"{_span(ahi)} | {_span(curl)} |"
            )
        rates = flag_rates(list(groups.values()))
        print(
            f"\nfar off (G' > 2x its class median or > 15 %): {rates['far']}, flagged "
            f"{rates['far_flagged']}; good (below the class median): {rates['good']}, "
            f"warned {rates['good_warned']}"
        )
        members = [r for g in groups.values() for r in g]
        worse, laws = classical_rates(members, base), law_rates(members)
        if worse["of"]:
            print(
                f"worse than the better classical map on the same file: {worse['worse']} of "
                f"{worse['of']}, flagged {worse['worse_flagged']}"
                + (f"; silent: {', '.join(worse['silent'])}" if worse["silent"] else "")
            )
        if laws["judged"]:
            print(
                f"law chosen by auto on {laws['judged']}: not the tissue's on {laws['wrong']}, "
                f"{laws['wrong_determined']} of those said to be determined by the data"
            )
        other = other_map_rates(members)
        if other["pairs"]:
            print(
                f"both laws' maps scored on {other['pairs']}: the kept map the better on "
                f"{other['kept_better']}; G' error summed {other['kept_sum']:.1f} points "
                f"(the better of each pair: {other['best_sum']:.1f})"
            )
        print("\n| member | G' | G'' | R | contrast | voxels/lambda (u) | checks fired |")
        print("|---|---|---|---|---|---|---|")
        for r in members:
            con = " / ".join(f"{v:.2f}" for v in (r["contrast"] or {}).values() if v is not None)
            print(
                f"| {r['member']} | {pct(r['storage'])} | {pct(r['loss'])} | "
                f"{'-' if r['r'] is None else round(r['r'], 3)} | {con or '-'} | "
                f"{r['voxels_true']} ({r['voxels_from_u']}) | "
                f"{', '.join(r['checks_failed']) or '-'} |"
            )
    return 0


def _span(values) -> str:
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return pct(float(np.median(v))) + (f" ({pct(min(v))}-{pct(max(v))})" if len(v) > 1 else "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="simulate and fit the members, one JSON line per fit")
    sim = sub.add_parser("simulate", help="write the members' datasets into --data (CPU)")
    for p in (go, sim):
        size = p.add_mutually_exclusive_group()
        size.add_argument("--quick", action="store_true", help="the GPU subset (~8 minutes)")
        size.add_argument("--tiny", action="store_true", help="tiny members and fits (CPU)")
        p.add_argument("--split", choices=("tuning", "heldout", "all"), default="heldout")
        p.add_argument("--members", nargs="+", help="only these member names")
    sim.add_argument("--data", required=True, help="the folder for the .npz files")
    go.add_argument("--records", required=True)
    go.add_argument("--arms", nargs="*", choices=("defaults", "rules"), default=["defaults"])
    go.add_argument("--set", action="append", default=[], help="JSON of Config overrides")
    go.add_argument(
        "--baselines", nargs="*", choices=("ahi-smoothed", "curl-mdev"),
        default=["ahi-smoothed", "curl-mdev"],
        help="classical maps run beside (default: both; the flag alone: none)",
    )  # fmt: skip
    go.add_argument("--data", help="folder caching the simulated members (.npz)")
    rep = sub.add_parser("report", help="markdown tables per class of records")
    rep.add_argument("records", nargs="+")
    ls = sub.add_parser("list", help="print the members")
    ls.add_argument("--quick", action="store_true")
    ls.add_argument("--tiny", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "list":
        for m in members("tiny" if args.tiny else "quick" if args.quick else "full"):
            print(f"{m.name:<32} {m.cls:<44} {m.voxel_mm} mm, {m.voxels} voxels/lambda, "
                  f"{m.grid} x {m.slices}, {m.frequencies} Hz, {m.law}")  # fmt: skip
        return 0
    return {"run": run, "report": report, "simulate": simulate_all}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
