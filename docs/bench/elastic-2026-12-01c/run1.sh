#!/bin/bash
# Device run 1: 3-D Fourier scale / z-anisotropy / batch sweep on the tuning volume; slice settings on the tuning slice.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=data/clean/tuning/four-target_volume_clean.npz
F="$V,$V:-20:0"
S="$V:slice,$V:slice:-20:0"
T=".tune/tune.py"
nvidia-smi --query-gpu=name --format=csv,noheader
(timeout 560 python3 $T $F navier '[{"slicewise":false,"sigma_factor_u":0.18},{"slicewise":false,"sigma_factor_u":0.12},{"slicewise":false,"sigma_factor_u":1.0,"_zscale":0.25},{"slicewise":false,"sigma_factor_u":1.0,"_zscale":0.1},{"slicewise":false,"sigma_factor_u":0.5,"_zscale":0.5},{"slicewise":false,"sigma_factor_u":0.5,"_zscale":0.25}]' > $OUT/p1.jsonl 2> $OUT/p1.err) &
(timeout 560 python3 $T $F navier '[{"slicewise":false,"batch_size":8192},{"slicewise":false,"batch_size":16384,"steps":20000}]' > $OUT/p2.jsonl 2> $OUT/p2.err) &
(timeout 560 python3 $T $F navier '[{"slicewise":false,"sigma_factor_u":0.18,"batch_size":8192},{"slicewise":false,"sigma_factor_u":0.5,"_zscale":0.25,"batch_size":8192}]' > $OUT/p3.jsonl 2> $OUT/p3.err) &
(timeout 560 python3 $T $S navier '[{},{"sigma_factor_mu":0.75},{"sigma_factor_mu":1.0},{"mu_width":128,"mu_depth":3},{"width":256,"n_features":128},{"steps":20000}]' > $OUT/p4.jsonl 2> $OUT/p4.err) &
wait
tail -n 3 $OUT/*.err
