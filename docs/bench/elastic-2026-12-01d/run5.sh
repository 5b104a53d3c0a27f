#!/bin/bash
# Device run 5b: four processes at once (wall times are not timings).
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
Z=data/clean/held-out/four-target-20mm_volume_clean.npz
(timeout 550 python3 $T $Z,$Z:-20:1 auto '[{"slicewise":true}]' > $OUT/s1.jsonl 2> $OUT/s1.err) &
(timeout 550 python3 $T $V,$V:-20:0 auto '[{"slicewise":false,"width":384,"n_features":192,"steps":20000}]' > $OUT/s2.jsonl 2> $OUT/s2.err) &
(timeout 550 python3 $T $V,$V:-20:0 auto '[{"slicewise":false,"sigma_factor_mu":1.0,"mu_width":128},{"slicewise":false,"width":512,"n_features":256}]' > $OUT/s3.jsonl 2> $OUT/s3.err) &
(timeout 550 python3 $T $Z:-20:1 auto '[{"slicewise":false},{"slicewise":false,"width":384,"n_features":192}]' > $OUT/s4.jsonl 2> $OUT/s4.err) &
wait
cat $OUT/s*.jsonl; tail -2 $OUT/s*.err
