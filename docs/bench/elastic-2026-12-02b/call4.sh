#!/bin/bash
# Eighth session, call 4 (five processes at once): the held-out 20 mm slab (80 x 100 x 20), clean and
# -20 dB seed 1, library default (pde_margin 3) against pde_margin=0; and the cropped tuning volume
# (field-of-view edges that are not free faces) with the default at seeds 2 and 3.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
E=.tune/edge.py
Z=.tune/d/four-target-20mm_volume_clean.npz
(timeout 400 python3 $E $Z '{}' > $OUT/h1.jsonl 2> $OUT/h1.err) &
(timeout 400 python3 $E $Z '{"pde_margin":0}' > $OUT/h2.jsonl 2> $OUT/h2.err) &
(timeout 400 python3 $E $Z:-20:1 '{}' > $OUT/h3.jsonl 2> $OUT/h3.err) &
(timeout 400 python3 $E $Z:-20:1 '{"pde_margin":0}' > $OUT/h4.jsonl 2> $OUT/h4.err) &
(timeout 400 python3 $E .tune/d/four-target_volume_clean.npz:crop=8-72-0-92 '{"seed":2}' '{"seed":3}' > $OUT/h5.jsonl 2> $OUT/h5.err) &
wait
cat $OUT/h*.jsonl
tail -n 3 $OUT/h*.err
