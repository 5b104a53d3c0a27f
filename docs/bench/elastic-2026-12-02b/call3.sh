#!/bin/bash
# Eighth session, call 3 (four processes at once): the library's pde_margin (default 3 for navier)
# against pde_margin=0 on held-out volumes (two-ellipse, four-target 50-70-90 Hz; clean and
# -20 dB seed 1), the tuning volume through the library path, and 2-D slices (tuning + held-out).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
E=.tune/edge.py
D=.tune/d
W=$D/two-ellipse_volume_clean.npz
F=$D/four-target-50-70-90hz_volume_clean.npz
(timeout 400 python3 $E $W '{}' '{"pde_margin":0}' > $OUT/g1.jsonl 2> $OUT/g1.err; timeout 160 python3 $E $W:-20:1 '{}' >> $OUT/g1.jsonl 2>> $OUT/g1.err) &
(timeout 230 python3 $E $W:-20:1 '{"pde_margin":0}' > $OUT/g2.jsonl 2> $OUT/g2.err; timeout 330 python3 $E $F '{}' '{"pde_margin":0}' >> $OUT/g2.jsonl 2>> $OUT/g2.err) &
(timeout 390 python3 $E $F:-20:1 '{}' '{"pde_margin":0}' > $OUT/g3.jsonl 2> $OUT/g3.err; timeout 170 python3 $E $D/four-target_volume_clean.npz '{}' >> $OUT/g3.jsonl 2>> $OUT/g3.err) &
(for s in $D/four-target_slice_clean.npz $D/four-target_slice_clean.npz:-20:0 $D/two-ellipse_slice_clean.npz $D/two-ellipse_slice_clean.npz:-20:1; do timeout 130 python3 $E $s '{}' '{"pde_margin":0}'; done > $OUT/g4.jsonl 2> $OUT/g4.err) &
wait
cat $OUT/g*.jsonl
tail -n 3 $OUT/g*.err
