#!/bin/bash
# Thirteenth session, second diagnosis (oracle.py, net "mu"): the mu-network given the true
# targets' edges as step channels (the u-network unchanged). The u-network oracle
# (call_oracle.sh) changed nothing (66 % against 66 %). Reading fixed before this run: if
# the 10 mm contrast on the clean tuning volume reaches >= 80 %, a modulus free to be sharp
# at the true edges is chosen sharp by the loss: the mu-network's smooth basis is the limit.
# If it stays within 5 points of the default fit's 66 %, the loss itself prefers the blurred
# modulus, and no change of either network's representation will close the gap.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=clean/tuning/four-target_volume_clean.npz
R=$OUT/oracle_mu.jsonl
run() { ( cd .tune && timeout 400 python3 oracle.py "$@" >> $R 2>>$OUT/err.txt ) & }
run $V 0.5 '{}' mu; run $V 1.0 '{}' mu; run $V:-20:0 0.5 '{}' mu
wait
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/oracle_mu.jsonl"):
    r = json.loads(l)
    print(r["delta"], r["net"], r["spec"].split("/")[-1], r["t"], r["all"], r["final_data"], r["final_pde"])
PY
