#!/bin/bash
# Tenth session, call 3: navier with a pressure that may jump where mu jumps (experimental
# form helmholtz_pinn/forms/navierj.py, p' = kappa (a0 + mu' a1)). Phase 1: tuning volume
# clean seeds 0/1, -20 dB (noise seed 0) seeds 0/1; the same with both pressure fields on the
# mu-network (clean seed 0); the tuning slice clean and -20 dB. Phase 2 (only if pickj.py
# passes): held-out volumes clean and -20 dB (noise seed 1).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/j; i=0
V=d/four-target_volume_clean.npz
J='"pde":"navierj","pde_margin":3'
run() {  # spec overrides
  i=$((i+1)); ( cd .tune && timeout 330 python3 edge.py "$1" "$2" > /tmp/j/j$i.jsonl 2>/tmp/j/e$i.log ) &
}
run $V "{$J}"; run $V "{$J,\"seed\":1}"; run $V:-20:0 "{$J}"; run $V:-20:0 "{$J,\"seed\":1}"
run $V "{$J,\"aux_network\":\"mu\"}"
run d/four-target_slice_clean.npz '{"pde":"navierj"}'; run d/four-target_slice_-20dB-seed0.npz '{"pde":"navierj"}'
wait
cat /tmp/j/j*.jsonl > $OUT/j1.jsonl
tail -n 3 /tmp/j/e*.log | grep -v "^$" | tail -6
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/j1.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"])
PY
verdict=$(python3 .tune/pickj.py $OUT/j1.jsonl); echo "$verdict"
case "$verdict" in PASS*)
  i=10
  for f in two-ellipse four-target-50-70-90hz four-target-20mm; do
    run d/${f}_volume_clean.npz "{$J}"; run d/${f}_volume_clean.npz:-20:1 "{$J}"
  done
  wait
  cat /tmp/j/j1?.jsonl > $OUT/j2.jsonl
  python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/j2.jsonl"):
    r = json.loads(l); print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"])
PY
esac
