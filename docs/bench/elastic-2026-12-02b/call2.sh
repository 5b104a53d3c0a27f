#!/bin/bash
# Eighth session, call 2 (four processes at once, tuning volume): is the PDE margin's gain stable
# (another seed), does it hurt where the field-of-view edges are not free faces (crop, seed 1),
# and hard against soft bands (weight 0.1 inside the band).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
E=.tune/edge.py
V=.tune/d/four-target_volume_clean.npz
(timeout 560 python3 $E $V:crop=8-72-0-92 '{"seed":1,"_pde_margin":3}' '{"seed":1}' > $OUT/f1.jsonl 2> $OUT/f1.err) &
(timeout 560 python3 $E $V '{"seed":1,"_pde_margin":3}' '{"seed":1}' > $OUT/f2.jsonl 2> $OUT/f2.err) &
(timeout 560 python3 $E $V '{"_pde_margin":2}' '{"_pde_margin":4,"_pde_margin_w":0.1}' > $OUT/f3.jsonl 2> $OUT/f3.err) &
(timeout 560 python3 $E $V:-20:0 '{"_pde_margin":2}' '{"_pde_margin":4,"_pde_margin_w":0.1}' > $OUT/f4.jsonl 2> $OUT/f4.err) &
wait
cat $OUT/f*.jsonl
tail -n 3 $OUT/f*.err
