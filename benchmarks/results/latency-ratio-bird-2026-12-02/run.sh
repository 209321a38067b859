#!/bin/bash
# Issue 57's latency ratio: baseline and V2 on the first 30 bird-public questions, side by side, one model thread
# each, default settings (evaluate uses BIRD's evidence and scores by BIRD's rule). Run from the repository root.
#   bash benchmarks/results/latency-ratio-bird-2026-12-02/run.sh OUT
OUT=${1:?usage: run.sh OUT}
export TEXT2SQL_N_THREADS=1
for program in baseline v2; do
  .venv/bin/text2sql evaluate --data ../shared/benchmarks/bird-public --split dev --program $program --limit 30 \
    --out "$OUT/$program" > "$OUT.$program.log" 2>&1 &
done
wait
