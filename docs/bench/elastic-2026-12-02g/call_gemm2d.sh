#!/bin/bash
# Prepared in the thirteenth session (not run). Put the tuning slice at
# .tune/clean/tuning/four-target_slice_clean.npz, copy gemm2d.py into .tune/, carry
# [".tune", ".whl"]. The GPU alone: the processes run one after another.
# Rule, fixed now: cuBLAS becomes the 2-D default (CUBLAS_MIN_POINTS for every program) if
# its first fit is at least 10 s shorter than Triton's, its second fit at most 15 % longer,
# and its G' median within 0.3 point of Triton's; then a test of gemm_options changes with
# it and performance.md records both lines.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
S=clean/tuning/four-target_slice_clean.npz
for mode in triton cublas triton cublas; do
  ( cd .tune && timeout 200 python3 gemm2d.py $mode $S >> $OUT/gemm2d.jsonl 2>>$OUT/err.txt )
done
cat $OUT/gemm2d.jsonl
