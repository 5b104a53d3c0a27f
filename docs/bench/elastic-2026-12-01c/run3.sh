#!/bin/bash
# Device run 3: the new library defaults on held-out data; slicewise vs 3-D; scalar regression; timing.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
H=data/clean/held-out
E=$H/two-ellipse_volume_clean.npz
G=$H/four-target-50-70-90hz_volume_clean.npz
V=data/clean/tuning/four-target_volume_clean.npz
T=".tune/tune.py"
(timeout 480 python3 $T $E,$E:-20:1 auto '[{"slicewise":false}]' > $OUT/r1.jsonl 2> $OUT/r1.err) &
(timeout 480 python3 $T $G,$G:-20:1 auto '[{"slicewise":false}]' > $OUT/r2.jsonl 2> $OUT/r2.err) &
(timeout 480 python3 $T $V,$E auto '[{"slicewise":true}]' > $OUT/r3.jsonl 2> $OUT/r3.err) &
(timeout 480 python3 $T $E:slice,$E:slice:-20:1,$G:slice,$G:slice:-20:1,scalar:four-target,scalar:four-target:-20 auto '[{}]' > $OUT/r4.jsonl 2> $OUT/r4.err) &
wait
(timeout 100 python3 $T $E:-20:2,$E:slice:-20:2 auto '[{"slicewise":false}]' > $OUT/r5.jsonl 2> $OUT/r5.err)
tail -n 3 $OUT/*.err
