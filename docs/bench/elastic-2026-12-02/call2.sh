#!/bin/bash
# Seventh session, call 2 (four processes at once): accuracy leads on the tuning volume
# (four-target 80 x 100 x 10), and a scalar volume at the 3-D defaults.
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
L=550
(timeout $L python3 $T $V,$V:-20:0 auto '[{"aux_network":"u"}]' > $OUT/n1.jsonl 2> $OUT/n1.err) &
(timeout $L python3 $T $V auto '[{"mu_width":256},{"sigma_factor_mu":0.75}]' > $OUT/n2.jsonl 2> $OUT/n2.err) &
(timeout $L python3 $T $V auto '[{"sigma_factor_mu":0.35}]' > $OUT/n3.jsonl 2> $OUT/n3.err; timeout 230 python3 $T scalarvol:four-target:10 auto '[{}]' >> $OUT/n3.jsonl 2>> $OUT/n3.err) &
(timeout $L python3 $T $V auto '[{"steps":20000}]' > $OUT/n4.jsonl 2> $OUT/n4.err) &
wait
for f in $OUT/n*.jsonl; do python3 -c "
import json
for l in open('$f'):
    d=json.loads(l)
    if 'median_rel_error_storage' not in d: print(l[:300]); continue
    print(d['file'][-36:], d['over'], d.get('t'), round(d['median_rel_error_storage'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d.get('contrast_transfer',{}).items()}, d.get('fq_fail'))
"; done
tail -3 $OUT/n*.err
