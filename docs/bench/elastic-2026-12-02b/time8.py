"""Wall time of the default 3-D fit (u 512 x 3), persistent cache in /tmp/jc.
argv: out.jsonl label n_fits [precision]"""
import contextlib, json, sys, time, warnings
warnings.simplefilter("ignore")
import jax
import helmholtz_pinn as hp
from helmholtz_pinn import metrics
hp.enable_compilation_cache("/tmp/jc")
out = open(sys.argv[1], "a")
label, n = sys.argv[2], int(sys.argv[3])
prec = (sys.argv[4] if len(sys.argv) > 4 else None) or None
kw = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
T = hp.load(".tune/d/four-target_volume_clean.npz")
for i in range(n):
    t = time.perf_counter()
    with jax.default_matmul_precision(prec) if prec else contextlib.nullcontext():
        r = hp.invert(T, progress=False, **kw)
    wall = time.perf_counter() - t
    e = metrics.evaluate(r.mu, T)
    m = r.metrics
    hist = m.get("history") or []
    line = dict(case=f"tuning volume 3-D default ({label}, fit {i})", precision=prec, over=kw, wall_s=round(wall, 1),
                steps=m.get("steps"), wall_time_s=m.get("wall_time_s"),
                err=e["median_rel_error_storage"], R=e["pearson_r_storage"],
                contrast=e.get("contrast_transfer"), device=jax.devices()[0].device_kind)
    out.write(json.dumps(line, default=float) + "\n"); out.flush(); print(json.dumps(line, default=float), flush=True)
