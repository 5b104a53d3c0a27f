#!/bin/bash
# PREPARED FOR THE NEXT SESSION, NOT RUN: the elastic accuracy report at the current defaults
# (pinn-auto) on every tuning and held-out file, in three device calls (PART = v1, v2, s), each
# under 10 minutes: v1 = volumes clean and -30 dB, v2 = volumes -20 and -10 dB, s = slices.
# The baselines (AHI, smoothed AHI, curl-MDEV) ran on CPU: baselines.log beside this file.
# Before the calls: mkdir -p .tune/clean/{tuning,held-out}; copy data/tuning/four-target_volume_clean.npz
# to .tune/clean/tuning/ and data/held-out/{two-ellipse,four-target-50-70-90hz,four-target-20mm}_volume_clean.npz
# to .tune/clean/held-out/ (50 MB); carry [".tune", ".whl"]; run: bash docs/bench/accuracy-2026-12-02/call_pinn.sh v1
# Afterwards, on this machine: python scripts/accuracy.py --report-only
#   docs/bench/accuracy-2026-12-02/{baselines,pinn_v1,pinn_v2,pinn_s}.log --out docs
PART=$1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 scripts/elastic_phantoms.py --out /tmp/el --from .tune/clean \
  --only four-target two-ellipse four-target-50-70-90hz four-target-20mm | tail -1
case $PART in
  v1) OUTPUT=volume; NOISE="clean -30";;
  v2) OUTPUT=volume; NOISE="-20 -10";;
  s)  OUTPUT=slice; NOISE="clean -30 -20 -10";;
  *) echo "PART must be v1, v2 or s"; exit 2;;
esac
mkdir -p /tmp/p
for c in four-target two-ellipse four-target-50-70-90hz four-target-20mm; do
  python3 scripts/accuracy.py --elastic /tmp/el --methods pinn-auto --set tuning held-out \
    --case $c --output $OUTPUT --noise $NOISE --noise-seeds 0 1 2 --no-figures \
    --out /tmp/p/$c --time-budget 480 > /tmp/p/$c.log 2>/tmp/p/$c.err &
done
wait
cat /tmp/p/*.log > $OUT/pinn_$PART.log
tail -n 2 /tmp/p/*.err
grep -c '"method": "pinn-auto"' $OUT/pinn_$PART.log
