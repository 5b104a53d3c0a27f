#!/bin/bash
# Ninth session, call 3: 2-D slice defaults, aux network (mu/u) x PDE margin (0/3), tuning slices and held-out slices.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
C='{} {"pde_margin":3} {"aux_network":"u"} {"aux_network":"u","pde_margin":3}'
S1='{"seed":1} {"pde_margin":3,"seed":1} {"aux_network":"u","seed":1} {"aux_network":"u","pde_margin":3,"seed":1}'
jobs=(
 "d/four-target_slice_clean.npz $C"
 "d/four-target_slice_clean.npz $S1"
 "d/four-target_slice_-20dB-seed0.npz $C"
 "d/two-ellipse_slice_clean.npz $C"
 "d/two-ellipse_slice_-20dB-seed1.npz $C"
 "d/four-target-50-70-90hz_slice_clean.npz $C"
 "d/four-target-50-70-90hz_slice_-20dB-seed1.npz $C"
 "d/four-target-20mm_slice_clean.npz $C"
 "d/four-target-20mm_slice_-20dB-seed1.npz $C"
)
mkdir -p /tmp/s
i=0
for j in "${jobs[@]}"; do
  i=$((i+1))
  ( cd .tune && eval timeout 420 python3 edge.py $(for w in $j; do printf "'%s' " "$w"; done) > /tmp/s/s$i.jsonl 2>/tmp/s/e$i.log ) &
  if (( i % 5 == 0 )); then wait; fi
done
wait
cat /tmp/s/s*.jsonl > $OUT/s1.jsonl
tail -n 3 /tmp/s/e*.log | grep -v "^$" | tail -20
python3 - <<'PY'
import json
for l in open("/root/out/s1.jsonl" if False else __import__("os").environ["OUT"] + "/s1.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1][:34], json.dumps(r["over"]), r["t"], r["all"]["med"], r["all"]["R"], r["all"]["G''"], r["all"]["c"], r["pde_margin"], r["prof"]["y1"][:6])
PY
