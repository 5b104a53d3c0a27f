#!/bin/bash
# Seventh session, call 4 (four processes at once): aux_network "u" against the default
# (library GEMM rule of this session) on the held-out volumes, clean and -20 dB.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
E=data/clean/held-out/two-ellipse_volume_clean.npz
F=data/clean/held-out/four-target-50-70-90hz_volume_clean.npz
Z=data/clean/held-out/four-target-20mm_volume_clean.npz
L=440
(timeout $L python3 $T $F auto '[{"aux_network":"u"},{}]' > $OUT/d1.jsonl 2> $OUT/d1.err) &
(timeout $L python3 $T $Z auto '[{"aux_network":"u"},{}]' > $OUT/d2.jsonl 2> $OUT/d2.err) &
(timeout $L python3 $T $V:-20:0,$F:-20:1 auto '[{}]' > $OUT/d3.jsonl 2> $OUT/d3.err) &
(timeout $L python3 $T $E:-20:1,$Z:-20:1 auto '[{}]' > $OUT/d4.jsonl 2> $OUT/d4.err) &
wait
for f in $OUT/d*.jsonl; do python3 -c "
import json
for l in open('$f'):
    d=json.loads(l)
    if 'median_rel_error_storage' not in d: print(l[:300]); continue
    print(d['file'][-40:], d['over'], d.get('t'), round(d['median_rel_error_storage'],4), round(d['median_rel_error_loss'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d.get('contrast_transfer',{}).items()}, d.get('fq_fail'))
"; done
for f in $OUT/*.err; do tail -n 2 $f; done
