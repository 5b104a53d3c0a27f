#!/bin/bash
# Call A (the GPU alone): whole-fit timings of the 3-D default, then XLA variants on its program.
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
timeout 200 python3 .tune/time8.py $OUT/t8.jsonl "first process, empty cache" 2
timeout 90 python3 .tune/time8.py $OUT/t8.jsonl "new process, warm disk cache" 1
timeout 270 python3 scripts/xla_options.py --out $OUT --variants library x3_xla autotune0_library --workloads volume --reps 5
