#!/bin/bash
# Slices at -10 dB: the regenerated report (../accuracy-2026-12-02/pinn_s.log) shows every
# held-out middle slice at -10 dB collapsing to the modulus floor (99 %, flagged by
# modulus_range / ahi_agreement) at the 2-D defaults (sigma_factor_u 1.0). Probe: the u-network's
# Fourier factor 0.5 (the 3-D default, whose volumes do not collapse at -10 dB) on the tuning
# slice at -10 dB (noise seed 0, made here) and the three held-out -10 dB slices, plus the
# default on the tuning slice. Five fits at once; each line is written to $OUT when done.
# The tuning volume is not carried (64 MiB limit): only the held-out clean volumes and .tune/d.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 scripts/elastic_phantoms.py --out /tmp/el --from .tune/clean --only two-ellipse four-target-50-70-90hz four-target-20mm | tail -1
i=0
while read -r spec over; do
  i=$((i+1)); ( cd .tune && timeout 300 python3 edge.py "$spec" "$over" > $OUT/s$i.jsonl 2>/tmp/s$i.log ) &
done <<JOBS
d/four-target_slice_clean.npz:-10:0 {}
d/four-target_slice_clean.npz:-10:0 {"sigma_factor_u":0.5}
/tmp/el/held-out/two-ellipse_slice_-10dB-seed1.npz {"sigma_factor_u":0.5}
/tmp/el/held-out/four-target-50-70-90hz_slice_-10dB-seed1.npz {"sigma_factor_u":0.5}
/tmp/el/held-out/four-target-20mm_slice_-10dB-seed1.npz {"sigma_factor_u":0.5}
JOBS
wait
cat $OUT/s*.jsonl | python3 -c "
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r['spec'].split('/')[-1], r['over'], r['all'], r['t'])"
