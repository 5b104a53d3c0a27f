#!/bin/bash
# Device run 6: the 512-wide 3-D fit on the tuning noise case and the held-out volumes;
# four processes at once (wall times are not timings).
pip install --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
T=.tune/tune.py
V=data/clean/tuning/four-target_volume_clean.npz
E=data/clean/held-out/two-ellipse_volume_clean.npz
F=data/clean/held-out/four-target-50-70-90hz_volume_clean.npz
Z=data/clean/held-out/four-target-20mm_volume_clean.npz
W='[{"slicewise":false,"width":512,"n_features":256}]'
(timeout 510 python3 $T $V:-20:0,$E:-20:1 auto "$W" > $OUT/c1.jsonl 2> $OUT/c1.err) &
(timeout 510 python3 $T $E,$F:-20:1 auto "$W" > $OUT/c2.jsonl 2> $OUT/c2.err) &
(timeout 510 python3 $T $F,$Z:-20:1 auto "$W" > $OUT/c3.jsonl 2> $OUT/c3.err) &
(timeout 510 bash -c "python3 $T $Z auto '$W'; python3 $T $V auto '[{\"slicewise\":false,\"width\":512,\"n_features\":256,\"sigma_factor_mu\":1.0,\"mu_width\":128}]'" > $OUT/c4.jsonl 2> $OUT/c4.err) &
wait
for f in $OUT/c*.jsonl; do python3 -c "
import json,sys
for l in open('$f'):
    d=json.loads(l); print(d['file'][-45:], d.get('over'), d.get('t'), d.get('steps_ran'), round(d['median_rel_error_storage'],4), round(d['pearson_r_storage'],3), {k:round(v,2) for k,v in d['contrast_transfer'].items()})
"; done
