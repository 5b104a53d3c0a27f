"""Time whole `invert` commands, one process each, and append their facts to a JSON-lines file.

python data/gpu/tta.py OUT.jsonl LOG DEADLINE_S TAG:FILE[:noahead][:extra args,...] ...
"""
import json, os, subprocess, sys, time

out, log, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
start = time.time()
cache = os.environ.get("CACHE", "/tmp/hp_cache")
for spec in sys.argv[4:]:
    tag, path, *rest = spec.split(":")
    if time.time() - start > deadline:
        print("skipped", tag, file=sys.stderr); continue
    entry = ["-m", "helmholtz_pinn.cli"]
    extra = []
    for r in rest:
        if r == "noahead":
            entry = ["data/gpu/noahead.py"]
        elif r:
            extra += r.split(",")
    dest = f"/tmp/runs/{tag}"
    cmd = [sys.executable, *entry, "invert", path, "--out", dest, "--overwrite",
           "--cache-dir", cache, "--no-progress", *extra]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    with open(log, "a") as f:
        f.write(f"=== {tag} rc={p.returncode} {wall:.1f}s {' '.join(cmd)}\n{p.stdout}\n{p.stderr[-3000:]}\n")
    rec = dict(tag=tag, file=path, extra=extra, entry=entry[-1], rc=p.returncode, wall_s=round(wall, 2))
    try:
        m = json.load(open(f"{dest}/metrics.json"))
        keys = ["median_rel_error_storage", "median_rel_error_loss", "pearson_r_storage",
                "contrast_transfer", "wall_time_s", "final_pde", "law", "steps", "law_spread"]
        rec.update({k: m.get(k) for k in keys})
        rec["fired"] = [c["name"] for c in m.get("fit_quality", []) if not c.get("passed", True) and not c.get("skipped")]
        plan = m.get("plan", {})
        rec["plan"] = {k: plan.get(k) for k in ("mu_model", "laws", "lbfgs_steps", "lbfgs_continued_to", "fit_size_rule", "batch_size")}
        import numpy as np
        import hashlib
        rec["mu_md5"] = hashlib.md5(np.load(f"{dest}/mu.npz")["mu"].tobytes()).hexdigest()
    except Exception as e:  # noqa
        rec["error"] = repr(e)
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps({k: rec.get(k) for k in ("tag", "rc", "wall_s", "median_rel_error_storage", "pearson_r_storage", "fired")}), flush=True)
