#!/bin/bash
# Thirteenth session: the navier form without its pressure (curlnav.py: PDE term |curl r|^2 /
# kappa, the pressure's gradient drops out). Two oracles placed the 10 mm gap in the free
# pressure. Rule fixed before the run: a pass needs, on the clean tuning volume, a 10 mm
# contrast >= 71 % (the paired default: 66 %, 2.85 %, the same line in three calls) at a G'
# median <= 3.25 %, and at -20 dB (noise seed 0) a median <= 4.4 % (default 3.99 %). A pass
# earns a library form with tests and a held-out check; a fail is recorded.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=clean/tuning/four-target_volume_clean.npz
S=clean/tuning/four-target_slice_clean.npz
R=$OUT/curlnav.jsonl
run() { ( cd .tune && timeout 370 python3 curlnav.py "$@" >> $R 2>>$OUT/err.txt ) & }
run $V curl:0; run $V:-20:0 curl:0; run $S curl:0
wait
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/curlnav.jsonl"):
    r = json.loads(l)
    print(r["mode"], r["spec"].split("/")[-1], r["t"], r["all"], r["final_data"], r["final_pde"], r["quality"])
PY
tail -5 $OUT/err.txt
