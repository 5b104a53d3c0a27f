#!/bin/bash
# Eighth session, call 1 (four processes at once): where does the free-face bias come from?
# Tuning volume: default; cropped 8 voxels in from x faces and y=max (crop edges are not free faces);
# PDE loss without a 3 / 6 voxel band at the in-plane faces; -20 dB default and margin 3.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
E=.tune/edge.py
V=.tune/d/four-target_volume_clean.npz
(timeout 380 python3 $E $V '{}' > $OUT/e1.jsonl 2> $OUT/e1.err; timeout 180 python3 $E $V:crop=8-72-0-92 '{}' >> $OUT/e1.jsonl 2>> $OUT/e1.err) &
(timeout 560 python3 $E $V '{"_pde_margin":3}' '{"_pde_margin":6}' > $OUT/e2.jsonl 2> $OUT/e2.err) &
(timeout 560 python3 $E $V:-20:0 '{}' '{"_pde_margin":3}' > $OUT/e3.jsonl 2> $OUT/e3.err) &
(timeout 560 python3 $E $V:crop=8-72-0-92 '{"_pde_margin":3}' > $OUT/e4.jsonl 2> $OUT/e4.err) &
wait
cat $OUT/e*.jsonl
tail -n 3 $OUT/e*.err
