#!/bin/bash
# Eighth session, call 5 (the GPU alone): the default 3-D fit with the PDE margin, first fit into an
# empty cache and a later fit in the same process (tuning volume, 10 000 steps).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=.:/tmp/site
timeout 150 python3 .tune/time8.py $OUT/t13.jsonl "pde_margin 3 default, first process, empty cache" 2
