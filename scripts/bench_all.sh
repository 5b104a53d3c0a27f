#!/usr/bin/env bash
# Run the JAX and the PyTorch benchmark of the seed workload and print the tables last.
# Usage: scripts/bench_all.sh [OUT_DIR] [--quick]
#   extra arguments for each side: JAX_ARGS="--sizes 200 1000" TORCH_ARGS="--reps 3"
# Runs from the repository root; PYTHON defaults to python3.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench_out}
QUICK=${2:-}
PY=${PYTHON:-python3}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
  --format=csv 2>/dev/null || echo "no nvidia-smi: CPU run"; } | tee "$OUT/machine.txt"
# shellcheck disable=SC2086  # word splitting of the extra arguments is intended
$PY scripts/benchmark.py --out "$OUT" $QUICK ${JAX_ARGS:-}
# shellcheck disable=SC2086
$PY scripts/benchmark_pytorch.py --out "$OUT" $QUICK ${TORCH_ARGS:-}
$PY scripts/benchmark.py --out "$OUT" --report | tee "$OUT/table.md"
