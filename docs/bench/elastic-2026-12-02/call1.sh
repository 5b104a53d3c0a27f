#!/bin/bash
# Seventh session, call 1 (the GPU alone): first 3-D fit after the one-program predict change,
# with the compile log; the same with cuBLAS GEMMs everywhere; cuBLAS vs Triton on the 3-D block.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site
JAX_LOG_COMPILES=1 timeout 200 python3 .tune/time8.py $OUT/t10.jsonl "first process, empty cache" 2 2> $OUT/t10_compiles.err
grep -h "Finished XLA compilation\|Finished jaxpr to MLIR\|Finished tracing" $OUT/t10_compiles.err | sed 's/.*Finished/Finished/' | head -60
timeout 80 python3 .tune/time8.py $OUT/t10.jsonl "new process, warm disk cache" 1
JC=/tmp/jc2 XLA_FLAGS=--xla_gpu_enable_triton_gemm=false JAX_LOG_COMPILES=1 timeout 150 python3 .tune/time8.py $OUT/t10.jsonl "cuBLAS everywhere, first process, empty cache" 2 2> $OUT/t10c_compiles.err
grep -h "Finished XLA compilation" $OUT/t10c_compiles.err | sed 's/.*Finished/Finished/' | head -30
timeout 150 python3 scripts/xla_options.py --out $OUT --variants library cublas_gemm --workloads volume volume4096 --reps 5
cp $OUT/xla_options.jsonl $OUT/xla_options_7a.jsonl 2>/dev/null; true
