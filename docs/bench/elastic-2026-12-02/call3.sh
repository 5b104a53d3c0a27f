#!/bin/bash
# Seventh session, call 3: the library's new GEMM rule (cuBLAS for 3-D programs) timed alone,
# then default maps (tuning + two-ellipse) for analysis and aux_network "u" on held-out volumes.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site
timeout 150 python3 .tune/time8.py $OUT/t11.jsonl "library rule: cuBLAS for 3-D, first process, empty cache" 2
export XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
E=data/clean/held-out/two-ellipse_volume_clean.npz
F=data/clean/held-out/four-target-50-70-90hz_volume_clean.npz
Z=data/clean/held-out/four-target-20mm_volume_clean.npz
L=400
(timeout $L python3 .tune/maps.py $OUT $V $E > $OUT/m1.jsonl 2> $OUT/m1.err) &
(timeout $L python3 $T $E:-20:1,$F:-20:1 auto '[{"aux_network":"u"}]' > $OUT/a2.jsonl 2> $OUT/a2.err) &
(timeout $L python3 $T $E,$Z:-20:1 auto '[{"aux_network":"u"}]' > $OUT/a3.jsonl 2> $OUT/a3.err) &
wait
cat $OUT/m1.jsonl
for f in $OUT/a*.jsonl; do python3 -c "
import json
for l in open('$f'):
    d=json.loads(l)
    if 'median_rel_error_storage' not in d: print(l[:300]); continue
    print(d['file'][-40:], d['over'], d.get('t'), round(d['median_rel_error_storage'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d.get('contrast_transfer',{}).items()}, d.get('fq_fail'))
"; done
for f in $OUT/*.err; do tail -n 2 $f; done
