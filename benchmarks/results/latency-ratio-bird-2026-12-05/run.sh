#!/bin/bash
# Issue 57's latency ratio on all of bird-public: the baseline and V2 side by side, one model thread each, default
# settings (evaluate shows BIRD's evidence and scores by BIRD's rule). Run from the repository root; resumable.
#   bash benchmarks/results/latency-ratio-bird-2026-12-05/run.sh OUT [LIMIT]
# then: python benchmarks/verdict_table.py OUT/baseline OUT/v2 --program baseline --after-program v2
OUT=${1:?usage: run.sh OUT [LIMIT]}
export TEXT2SQL_N_THREADS=1
for program in baseline v2; do
  .venv/bin/text2sql evaluate --data ../shared/benchmarks/bird-public --split dev --program $program \
    ${2:+--limit $2} --out "$OUT/$program" > "$OUT.$program.log" 2>&1 &
done
wait
