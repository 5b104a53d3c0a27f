#!/bin/bash
# Ninth session, call 5: 10 mm contrast on the tuning volume (phase 1), the picked setting on
# tuning -20 dB and held-out volumes (phase 2, only if pick.py picks one).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/c; i=0
for o in '{}' '{"pde_weight":0.3}' '{"pde_weight":1.0}' '{"noise_floor":0.01}' '{"sigma_factor_mu":1.0}'; do
  i=$((i+1)); ( cd .tune && timeout 280 python3 edge.py d/four-target_volume_clean.npz "$o" > /tmp/c/c$i.jsonl 2>/tmp/c/e$i.log ) &
done
wait
cat /tmp/c/c*.jsonl > $OUT/c1.jsonl
P=$(python3 .tune/pick.py $OUT/c1.jsonl); echo "picked: '$P'"
if [ -n "$P" ]; then
  j=0
  for f in d/four-target_volume_clean.npz:-20:0 d/two-ellipse_volume_clean.npz d/four-target-50-70-90hz_volume_clean.npz d/four-target-20mm_volume_clean.npz; do
    j=$((j+1)); ( cd .tune && timeout 250 python3 edge.py $f "$P" > /tmp/c/p$j.jsonl 2>/tmp/c/f$j.log ) &
  done
  wait; cat /tmp/c/p*.jsonl > $OUT/c2.jsonl
fi
tail -n 2 /tmp/c/e*.log /tmp/c/f*.log 2>/dev/null | grep -v "^$" | tail -12
python3 - <<'PY'
import json, os, glob
for f in sorted(glob.glob(os.environ["OUT"] + "/c*.jsonl")):
    for l in open(f):
        r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"], r["pde_margin"])
PY
