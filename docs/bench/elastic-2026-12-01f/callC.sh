#!/bin/bash
# Call C: the candidate 3-D default (mu-network 128 x 3, batch 2048) on the tuning volume and the held-out volumes, four processes at once.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
E=data/clean/held-out/two-ellipse_volume_clean.npz
F=data/clean/held-out/four-target-50-70-90hz_volume_clean.npz
Z=data/clean/held-out/four-target-20mm_volume_clean.npz
C='[{"mu_width":128,"mu_depth":3,"batch_size":2048}]'
L=530
(timeout $L python3 $T $V:-20:0,$V auto "$C" > $OUT/e1.jsonl 2> $OUT/e1.err) &
(timeout $L python3 $T $E,$E:-20:1 auto "$C" > $OUT/e2.jsonl 2> $OUT/e2.err) &
(timeout $L python3 $T $F,$F:-20:1 auto "$C" > $OUT/e3.jsonl 2> $OUT/e3.err) &
(timeout $L python3 $T $Z,$Z:-20:1 auto "$C" > $OUT/e4.jsonl 2> $OUT/e4.err) &
wait
for f in $OUT/e*.jsonl; do python3 -c "
import json
for l in open('$f'):
    d=json.loads(l)
    if 'median_rel_error_storage' not in d: print(l[:300]); continue
    print(d['file'][-36:], d.get('t'), d.get('steps_ran',{}).get('steps'), round(d['median_rel_error_storage'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d['contrast_transfer'].items()}, d.get('fq_fail'))
"; done
