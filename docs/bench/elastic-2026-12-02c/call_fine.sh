#!/bin/bash
# Prepared by the ninth session; run by the tenth (output: ../elastic-2026-12-02d/fine.jsonl).
# Does the FEM mesh limit the 10 mm disk's contrast? The default-mesh and the fine-mesh
# tuning volume, library defaults, seeds 0 and 1 clean and noise seed 0 at -20 dB: six fits
# at once. Before the call:
#   cp docs/bench/elastic-2026-12-02b/edge.py .tune/ && mkdir -p .tune/d
#   cp data/tuning/four-target_volume_clean.npz data/tuning/four-target-fine_volume_clean.npz .tune/d/
# then run with carry [".tune", ".whl"]. Compare the 'c' field (contrast per region; '3' is
# the 10 mm disk) between the two files at equal seeds.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/f; i=0
for f in four-target four-target-fine; do
  for job in "d/${f}_volume_clean.npz {}" "d/${f}_volume_clean.npz {\"seed\":1}" "d/${f}_volume_clean.npz:-20:0 {}"; do
    i=$((i+1)); set -- $job
    ( cd .tune && timeout 400 python3 edge.py "$1" "$2" > /tmp/f/f$i.jsonl 2>/tmp/f/e$i.log ) &
  done
done
wait
cat /tmp/f/f*.jsonl > $OUT/fine.jsonl
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/fine.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["all"])
PY
