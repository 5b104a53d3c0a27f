#!/bin/bash
# Thirteenth session, a diagnosis (oracle.py): the u-network given the true targets' edges as
# kinked input channels. Reading fixed before the run: if the 10 mm contrast on the clean
# tuning volume reaches >= 80 % (the default: 66-67 %), the representation of u at the
# interface is the limit and a kink-capable u (e.g. fed by the mu-network) is worth building;
# if it stays within 5 points of the paired default fit, it is not, and that idea is dropped.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=clean/tuning/four-target_volume_clean.npz
R=$OUT/oracle.jsonl
run() { ( cd .tune && timeout 500 python3 oracle.py "$@" >> $R 2>>$OUT/err.txt ) & }
run $V 0; run $V 0.5; run $V 1.0; run $V:-20:0 0.5
wait
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/oracle.jsonl"):
    r = json.loads(l)
    print(r["delta"], r["spec"].split("/")[-1], r["t"], r["all"], r["final_data"], r["final_pde"])
PY
