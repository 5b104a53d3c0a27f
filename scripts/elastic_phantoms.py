"""Write the tuning and held-out sets of 3-D elastic MRE phantoms as canonical .npz files.

    python scripts/elastic_phantoms.py --out data/elastic            # every case (slow)
    python scripts/elastic_phantoms.py --out /tmp/el --quick         # coarse mesh, minutes
    python scripts/elastic_phantoms.py --out data/elastic --only four-target

Cases (each one finite-element solve of helmholtz_pinn.forward.elastic.simulate_elastic, every
file derived from its clean volume):
  tuning/    four-target, 60/80/100 Hz, 80 x 100 x 10 mm: clean and -20 dB (seed 0);
             four-target-fine, the same on a 1.73 mm mesh (10 cubes per wavelength): clean
  held-out/  two-ellipse (60/80/100 Hz); four-target at 50/70/90 Hz; four-target
             20 mm thick (80 x 100 x 20 voxels): clean, and -30/-20/-10 dB with seeds 1, 2
``--from DIR`` derives every file from the clean volumes DIR/SET/CASE_volume_clean.npz
of an earlier run instead of solving (noise and slices are deterministic, so the files
are the same): carry the clean volumes to another machine, write the sets there.
Each noise level is written as a volume (F, 3, nx, ny, nz) and as the middle z-slice
(F, 3, nx, ny); a slice's noise is drawn for the slice. Files are named
CASE_{volume,slice}_{clean,NdB-seedS}.npz; manifest.json lists them with their settings.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from helmholtz_pinn import load, save, simulate_elastic
from helmholtz_pinn.lab import middle_slice, shared_noise

# name -> (set, simulate_elastic keywords, [(noise_db, seed), ...]); None = clean
HELD_OUT_NOISE = [(None, 0)] + [(db, s) for db in (-30.0, -20.0, -10.0) for s in (1, 2)]
CASES = {
    "four-target": ("tuning", {}, [(None, 0), (-20.0, 0)]),
    "two-ellipse": ("held-out", {"layout": "two-ellipse"}, HELD_OUT_NOISE),
    "four-target-50-70-90hz": ("held-out", {"frequencies": (50.0, 70.0, 90.0)}, HELD_OUT_NOISE),
    # 20 mm: twice the dofs; complex64 factors with refinement (fem_solve) fit 23 GiB
    "four-target-20mm": (
        "held-out",
        {"shape": (80, 100, 20), "precision": "mixed"},
        HELD_OUT_NOISE,
    ),
    # the tuning phantom on a finer mesh (10 cubes per shear wavelength, 1.73 mm, against 8):
    # does the FEM mesh limit the small targets' contrast? (docs/elastic.md)
    "four-target-fine": (
        "tuning",
        {"elements_per_wavelength": 10.0, "precision": "mixed"},
        [(None, 0)],
    ),
}
QUICK_ELEMENTS_PER_WAVELENGTH = 3.0  # default 8; --quick: a coarse mesh, not for accuracy


def _noise_tag(noise_db: float | None, seed: int) -> str:
    return "clean" if noise_db is None else f"{noise_db:g}dB-seed{seed}"


def write_sets(
    out: Path, only: list[str] | None = None, quick: bool = False, source: Path | None = None
) -> list[dict]:
    """Simulate the selected cases (all by default; with ``source``, read their clean
    volumes from there) and write their files under ``out``; returns the manifest
    entries (also written to ``out/manifest.json``)."""
    names = list(CASES) if not only else only
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; valid: {', '.join(CASES)}")
    entries = []
    for name in names:
        group, overrides, noise = CASES[name]
        kwargs = dict(overrides)
        if quick:
            kwargs["elements_per_wavelength"] = QUICK_ELEMENTS_PER_WAVELENGTH
        start = time.perf_counter()
        if source is None:
            volume = simulate_elastic(**kwargs)
        else:
            volume = load(source / group / f"{name}_volume_clean.npz")
        seconds = time.perf_counter() - start
        print(f"{name}: solved in {seconds:.0f} s, u {volume.u.shape}", flush=True)
        (out / group).mkdir(parents=True, exist_ok=True)
        for output, clean in (("volume", volume), ("slice", middle_slice(volume))):
            for noise_db, seed in noise:
                data = clean if noise_db is None else shared_noise(clean, noise_db, seed)
                path = out / group / f"{name}_{output}_{_noise_tag(noise_db, seed)}.npz"
                save(data, path)
                entries.append(
                    dict(
                        file=str(path.relative_to(out)),
                        case=name,
                        set=group,
                        output=output,
                        noise_db=noise_db,
                        seed=seed if noise_db is not None else None,
                        settings={
                            k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()
                        },
                        frequency_hz=volume.frequency.tolist(),
                        solve_seconds=round(seconds, 1),
                    )
                )
    manifest = out / "manifest.json"
    previous = json.loads(manifest.read_text()) if manifest.exists() else []
    kept = [e for e in previous if e["case"] not in names]
    manifest.write_text(json.dumps(kept + entries, indent=1) + "\n")
    return entries


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"cases: {', '.join(CASES)}")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"coarse mesh ({QUICK_ELEMENTS_PER_WAVELENGTH:g} elements per shear wavelength)",
    )
    parser.add_argument(
        "--from", dest="source", type=Path, help="derive the files from clean volumes there"
    )
    args = parser.parse_args(argv)
    entries = write_sets(args.out, args.only, args.quick, args.source)
    print(f"wrote {len(entries)} files under {args.out}")


if __name__ == "__main__":
    main()
