#!/bin/bash
export PYTHONPATH=.
C='{"mu_width":128,"mu_depth":3,"batch_size":2048}'
timeout 200 python3 .tune/time8.py $OUT/t9.jsonl "first process, empty cache" 2 "" "$C"
timeout 80 python3 .tune/time8.py $OUT/t9.jsonl "new process, warm disk cache" 1 "" "$C"
