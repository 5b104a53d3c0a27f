#!/bin/bash
# Twelfth session, last H200 call (about 400 s of device time left): does a full batch help
# 2-D slices as batch 8192 helped volumes? Middle slices (80 x 100, .tune/s/, made on CPU
# with elastic.middle_slice; the tuning one equals the report's slice bit for bit).
# Rule, fixed before the run: every voxel each step (batch_size 8000 >= the 8000 mask voxels)
# replaces the 2-D default batch 2048 only if, on the three held-out slices (clean), R rises
# by at least 0.01 on average at a mean G' median at most 0.2 point worse, the held-out
# -20 dB slices (two-ellipse, four-target 50-70-90 Hz, noise seed 1) are at most 0.3 point
# worse on average, the tuning slice at most 0.3 point worse, and one first fit alone takes
# at most 30 s (the issue's target). Part 1: a full-batch first fit alone (wall time).
# Part 2: twelve fits at once. Lines are appended to $OUT as they finish.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
R=$OUT/slices.jsonl
FULL='{"batch_size":8000}'
( cd .tune && timeout 90 python3 repro.py s/four-target_slice_clean.npz "$FULL" >> $R 2>/dev/null )
for f in four-target two-ellipse four-target-20mm four-target-50-70-90hz; do
  for o in '{}' "$FULL"; do
    ( cd .tune && timeout 150 python3 repro.py s/${f}_slice_clean.npz "$o" >> $R 2>/dev/null ) &
  done
done
for f in two-ellipse four-target-50-70-90hz; do
  for o in '{}' "$FULL"; do
    ( cd .tune && timeout 150 python3 repro.py s/${f}_slice_clean.npz:-20:1 "$o" >> $R 2>/dev/null ) &
  done
done
wait
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/slices.jsonl"):
    r = json.loads(l)
    print(r["spec"].split("/")[-1], r["over"], r["t"], r["all"], r["quality"]["data_fit"][1])
PY
