#!/bin/bash
# Tenth session, call 4: a lower PDE weight (0.05, default 0.1) against the 10 mm contrast,
# tuning volume (clean seed 0, -20 dB noise seed 0) and held-out volumes (clean; four-target
# 50-70-90 Hz also at -20 dB, noise seed 1) in one call; defaults: fine.jsonl and the eighth
# session's held-out table. Rule: README.md (set before the run, written there after it).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/w; i=0
W='{"pde_weight":0.05}'
for spec in d/four-target_volume_clean.npz d/four-target_volume_clean.npz:-20:0 d/two-ellipse_volume_clean.npz \
    d/four-target-50-70-90hz_volume_clean.npz d/four-target-50-70-90hz_volume_clean.npz:-20:1 d/four-target-20mm_volume_clean.npz; do
  i=$((i+1)); ( cd .tune && timeout 300 python3 edge.py "$spec" "$W" > /tmp/w/w$i.jsonl 2>/tmp/w/e$i.log ) &
done
wait
cat /tmp/w/w*.jsonl > $OUT/w.jsonl
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/w.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"])
PY
