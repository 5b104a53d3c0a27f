#!/bin/bash
# Call B: (1) the GPU alone: GEMM algorithm variants on the 3-D default program and the 2-D defaults;
# (2) four accuracy/time leads at once on the tuning volume (wall times are not timings).
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site
timeout 220 python3 scripts/xla_options.py --out $OUT --variants cublas_gemm x3_cublas x6_xla x6_cublas --workloads volume defaults --reps 5 2>&1 | grep '^{'
export XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
L=330
(timeout $L python3 $T $V,$V:-20:0 auto '[{"pde_weight":0.3}]' > $OUT/b1.jsonl 2> $OUT/b1.err) &
(timeout $L python3 $T $V,$V:-20:0 auto '[{"pde_weight":0.03}]' > $OUT/b2.jsonl 2> $OUT/b2.err) &
(timeout $L python3 $T $V,$V:-20:0 auto '[{"mu_width":128,"mu_depth":3}]' > $OUT/b3.jsonl 2> $OUT/b3.err) &
(timeout $L python3 $T $V,$V:-20:0 auto '[{"batch_size":2048}]' > $OUT/b4.jsonl 2> $OUT/b4.err) &
wait
for f in $OUT/b*.jsonl; do python3 -c "
import json
for l in open('$f'):
    d=json.loads(l)
    if 'median_rel_error_storage' not in d: print(l[:300]); continue
    print(d['file'][-30:], d.get('over'), d.get('t'), d.get('steps_ran',{}).get('steps'), round(d['median_rel_error_storage'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d['contrast_transfer'].items()})
"; done
tail -3 $OUT/b1.err
