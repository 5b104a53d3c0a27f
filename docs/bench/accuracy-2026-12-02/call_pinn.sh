#!/bin/bash
# The elastic accuracy report at the current defaults (pinn-auto) for OUTPUT = volume or slice
# (the middle z-plane): every tuning and held-out case x clean, -30, -20, -10 dB, noise seed 0
# (tuning) or 1 (held-out): 14 fits, as 8 parallel streams on one H200. Ran as
# `call_pinn.sh volume` -> pinn_v.log and `call_pinn.sh slice` -> pinn_s.log (eleventh session).
# The baselines (AHI, smoothed AHI, curl-MDEV; all noise seeds) ran on CPU: baselines.log.
# Clean volumes carried in .tune/clean/{tuning,held-out}/ (from data/); noisy files are derived
# on the device. Carry [".tune", ".whl"].
OUTPUT=$1; K=${OUTPUT:0:1}
case $OUTPUT in volume|slice) ;; *) echo "OUTPUT must be volume or slice"; exit 2;; esac
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 scripts/elastic_phantoms.py --out /tmp/el --from .tune/clean \
  --only four-target two-ellipse four-target-50-70-90hz four-target-20mm | tail -1
W=/tmp/p$K; mkdir -p $W
for c in four-target two-ellipse four-target-50-70-90hz four-target-20mm; do
  for n in "clean -30" "-20 -10"; do
    k=$c${n// /}
    python3 scripts/accuracy.py --elastic /tmp/el --methods pinn-auto --set tuning held-out \
      --case $c --output $OUTPUT --noise $n --noise-seeds 0 1 --no-figures \
      --out $W/$k --time-budget 300 > $W/$k.log 2>$W/$k.err &
  done
done
wait
cat $W/*.log > $OUT/pinn_$K.log
mkdir -p $OUT/maps_$K; for d in $W/*/; do cp $d/elastic_maps/*.npz $OUT/maps_$K/ 2>/dev/null; done
tail -qn 1 $W/*.err
grep -c '"method": "pinn-auto"' $OUT/pinn_$K.log
