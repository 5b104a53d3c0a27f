#!/bin/bash
# Ninth session, call 6: the 10 mm contrast against the u-network's scale and the pressure's network (tuning volume, clean).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/c; i=0
for o in '{"sigma_factor_u":0.75}' '{"sigma_factor_u":1.0}' '{"sigma_ratio_z":0.5}' '{"aux_network":"mu"}'; do
  i=$((i+1)); ( cd .tune && timeout 230 python3 edge.py d/four-target_volume_clean.npz "$o" > /tmp/c/c$i.jsonl 2>/tmp/c/e$i.log ) &
done
wait
cat /tmp/c/c*.jsonl > $OUT/c3.jsonl
tail -n 2 /tmp/c/e*.log | grep -v "^$" | tail -8
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/c3.jsonl"):
    r = json.loads(l); print(r["over"], r["t"], r["all"], r["pde_margin"], r["prof"]["x0"][:5])
PY
