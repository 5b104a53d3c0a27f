#!/bin/bash
# Tenth session, call 2 (eight fits at once, tuning volume four-target 80 x 100 x 10):
# (a) the pressure on the mu-network (aux_network="mu") against the 3-D default (u), with the
#     PDE margin: clean seed 1, -20 dB (noise seed 0) at training seeds 0 and 1, and the default
#     at -20 dB seed 1 (the default's clean seeds 0/1 and -20 dB seed 0 are in fine.jsonl, call 1;
#     aux mu clean seed 0 is in ../elastic-2026-12-02c/c3.jsonl).
# (b) the 10 mm contrast against the pressure's Fourier scale (aux mu with sigma_factor_mu 0.75
#     and 1.0; 1.0 with a 256-wide mu-network) and against training length (20 000 steps).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/a; i=0
V=d/four-target_volume_clean.npz
while read -r spec over; do
  i=$((i+1))
  ( cd .tune && timeout 560 python3 edge.py "$spec" "$over" > /tmp/a/a$i.jsonl 2>/tmp/a/e$i.log ) &
done <<JOBS
$V {"seed":1,"aux_network":"mu"}
$V:-20:0 {"aux_network":"mu"}
$V:-20:0 {"seed":1,"aux_network":"mu"}
$V:-20:0 {"seed":1}
$V {"aux_network":"mu","sigma_factor_mu":0.75}
$V {"aux_network":"mu","sigma_factor_mu":1.0}
$V {"aux_network":"mu","sigma_factor_mu":1.0,"mu_width":256}
$V {"steps":20000}
JOBS
wait
cat /tmp/a/a*.jsonl > $OUT/aux.jsonl
tail -n 2 /tmp/a/e*.log | grep -v "^$" | tail -8
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/aux.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"])
PY
