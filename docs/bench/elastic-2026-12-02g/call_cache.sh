#!/bin/bash
# Thirteenth session: first-fit wall time of the CLI with the persistent compilation cache
# (on by default, ~/.cache/helmholtz_pinn/jax), the GPU alone: each input twice in fresh
# processes, the first into an empty cache, the second reading it. Whole process timed
# (imports, load, fit, prediction, checks, writing outputs and figures).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
C=/tmp/jaxcache; rm -rf $C
for f in slice volume; do
  for pass in empty-cache cached; do
    t0=$(date +%s.%N)
    python3 -c "from helmholtz_pinn.cli import main; main()" invert .tune/clean/tuning/four-target_${f}_clean.npz \
      --out /tmp/o_${f}_${pass} --cache-dir $C > $OUT/${f}_${pass}.log 2>&1
    rc=$?; t1=$(date +%s.%N)
    python3 - "$f" "$pass" "$t0" "$t1" "$rc" >> $OUT/cache.jsonl <<'PY'
import json, sys
f, p, t0, t1, rc = sys.argv[1:]
m = json.load(open(f"/tmp/o_{f}_{p}/metrics.json"))
e = m.get("evaluation", m)
print(json.dumps({"input": f, "pass": p, "rc": int(rc), "wall_s": round(float(t1) - float(t0), 1),
    "invert_wall_time_s": m.get("wall_time_s"), "median": e.get("median_rel_error_storage")}))
PY
  done
done
du -sh $C >> $OUT/cache.jsonl
cat $OUT/cache.jsonl | cut -c1-400
