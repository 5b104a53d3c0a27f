#!/bin/bash
# The elastic accuracy report at the current defaults (pinn-auto), volumes: every tuning and
# held-out case x clean, -30, -20, -10 dB, noise seed 0 (tuning) or 1 (held-out): 14 fits, as 8 parallel streams on one
# H200. The baselines (AHI, smoothed AHI, curl-MDEV; all noise seeds) ran on CPU: baselines.log.
# Clean volumes carried in .tune/clean/{tuning,held-out}/ (from data/); noisy files are derived
# on the device. Carry [".tune", ".whl"]. Run: bash docs/bench/accuracy-2026-12-02/call_v.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 scripts/elastic_phantoms.py --out /tmp/el --from .tune/clean \
  --only four-target two-ellipse four-target-50-70-90hz four-target-20mm | tail -1
mkdir -p /tmp/p
for c in four-target two-ellipse four-target-50-70-90hz four-target-20mm; do
  for n in "clean -30" "-20 -10"; do
    k=$c${n// /}
    python3 scripts/accuracy.py --elastic /tmp/el --methods pinn-auto --set tuning held-out \
      --case $c --output volume --noise $n --noise-seeds 0 1 --no-figures \
      --out /tmp/p/$k --time-budget 300 > /tmp/p/$k.log 2>/tmp/p/$k.err &
  done
done
wait
cat /tmp/p/*.log > $OUT/pinn_v.log
mkdir -p $OUT/maps_v; for d in /tmp/p/*/; do cp $d/elastic_maps/*.npz $OUT/maps_v/ 2>/dev/null; done
tail -qn 1 /tmp/p/*.err
grep -c '"method": "pinn-auto"' $OUT/pinn_v.log
