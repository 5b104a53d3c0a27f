#!/bin/bash
# Ninth session, call 4: held-out volumes at -10 and -30 dB (noise seed 1, shared_noise as the generator), library defaults.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/v; i=0
for c in two-ellipse four-target-50-70-90hz four-target-20mm; do for db in -10 -30; do
  i=$((i+1)); ( cd .tune && timeout 500 python3 edge.py d/${c}_volume_clean.npz:$db:1 '{}' > /tmp/v/v$i.jsonl 2>/tmp/v/e$i.log ) &
done; done
wait
cat /tmp/v/v*.jsonl > $OUT/v1.jsonl
tail -n 2 /tmp/v/e*.log
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/v1.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["t"], r["all"], r["pde_margin"])
PY
