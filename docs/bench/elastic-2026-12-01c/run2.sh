#!/bin/bash
# Device run 2: 3-D network capacity (with the anisotropic z scale) and slice capacity/mu scale.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
V=data/clean/tuning/four-target_volume_clean.npz
F="$V,$V:-20:0"
S="$V:slice,$V:slice:-20:0"
T=".tune/tune.py"
A='"slicewise":false,"sigma_factor_u":0.5,"_zscale":0.25'
W='"width":256,"n_features":128'
(timeout 570 python3 $T $F navier "[{$A,$W,\"batch_size\":4096},{$A,$W,\"batch_size\":8192}]" > $OUT/q1.jsonl 2> $OUT/q1.err) &
(timeout 570 python3 $T $F navier "[{$W,\"slicewise\":false,\"sigma_factor_u\":1.0,\"_zscale\":0.25,\"batch_size\":8192},{$W,\"slicewise\":false,\"sigma_factor_u\":0.25,\"batch_size\":8192}]" > $OUT/q2.jsonl 2> $OUT/q2.err) &
(timeout 570 python3 $T $F navier "[{$A,\"width\":384,\"n_features\":192,\"batch_size\":4096}]" > $OUT/q3.jsonl 2> $OUT/q3.err) &
(timeout 570 python3 $T $S navier "[{$W,\"sigma_factor_mu\":1.0},{$W,\"sigma_factor_mu\":0.75},{\"sigma_factor_mu\":1.0,\"mu_width\":128,\"mu_depth\":3},{$W,\"steps\":20000}]" > $OUT/q4.jsonl 2> $OUT/q4.err) &
wait
tail -n 3 $OUT/*.err
