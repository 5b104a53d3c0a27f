#!/bin/bash
# Twelfth session, one H200 call, nine fits at once (library defaults unless named):
# - same seed twice (R1, R2) and twice more with XLA's autotuning off (A1, A2): is a fit
#   bitwise reproducible between processes, and does autotuning under load change it? (the
#   -30 dB figures of the ninth and eleventh sessions differ by 0.3-0.5 point);
# - seeds 1 and 2 of the same file: the seed spread at -30 dB;
# - the cropped tuning volume, seed 0 (the poor optimum of the eighth and eleventh sessions):
#   does the new data_fit check flag it?
# - scalar held-out phantoms smooth and stripes at -10 dB (2-D, current defaults: the noisy
#   2-D rule applies).
# Carry [".tune", ".whl"]; .tune/repro.py is repro.py; volumes in .tune/clean/.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/e
H=clean/held-out/two-ellipse_volume_clean.npz:-30:1
T=clean/tuning/four-target_volume_clean.npz:crop=8-72-0-92
run() { name=$1; shift; ( cd .tune && timeout 560 python3 repro.py "$@" > /tmp/e/$name.jsonl 2>/tmp/e/$name.log ) & }
run R1 $H; run R2 $H
XLA_FLAGS=--xla_gpu_autotune_level=0 run A1 $H
XLA_FLAGS=--xla_gpu_autotune_level=0 run A2 $H
run S1 $H '{"seed":1}'; run S2 $H '{"seed":2}'
run C0 $T
run P1 scalar:smooth:-10:0; run P2 scalar:stripes:-10:0
wait
cat /tmp/e/*.jsonl > $OUT/repro.jsonl
tail -n 3 /tmp/e/*.log | tail -40
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/repro.jsonl"):
    r = json.loads(l)
    bad = [k for k, v in r["quality"].items() if not v[0]]
    print(r["spec"].split("/")[-1], r["over"], r["xla_flags"][-20:], r["t"], r["all"], "data_fit", r["quality"]["data_fit"], "failed", bad, r["sha256_mu"])
PY
