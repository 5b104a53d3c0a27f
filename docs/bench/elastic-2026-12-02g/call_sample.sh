#!/bin/bash
# Prepared in the twelfth session for the next one (not run): misfit-weighted voxel sampling
# (sample.py). Put the tuning volume at .tune/clean/tuning/four-target_volume_clean.npz and
# copy sample.py and repro.py into .tune/; carry [".tune", ".whl"]. Five processes, each a
# default first fit then a sampled one (curv: the sampled one only), on one H200.
# Rule, fixed now: a sampling passes if on the clean tuning volume its 10 mm contrast is at
# least 5 points above the paired first (default) fit's, at a G' median at most 0.4 point
# worse, and at -20 dB (noise seed 0) its median is at most 0.4 point worse than its own
# first fit's. A pass earns an in-loop version (misfit from the running fit, resampled every
# few blocks) and a held-out check; a fail is recorded and the idea dropped.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=clean/tuning/four-target_volume_clean.npz
R=$OUT/sample.jsonl
run() { ( cd .tune && timeout 560 python3 sample.py "$@" >> $R 2>/dev/null ) & }
run $V misfit 4 0; run $V misfit 16 0; run $V misfit 4 1; run $V curv 4 0
run $V:-20:0 misfit 4 0
wait
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/sample.jsonl"):
    r = json.loads(l)
    print(r["stage"], r["spec"].split("/")[-1], r["over"], r["t"], r["all"])
PY
