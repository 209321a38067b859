#!/bin/bash
# Issue 57's latency ratio on SParC dev: the baseline and V2 on the first LIMIT turns (default 60; "all": every turn)
# of DATA (default SParC dev), default settings, side by side, one model thread each. Run from the repository root;
# resumable.
#   bash benchmarks/results/latency-ratio-sparc-2026-12-02/run.sh OUT [LIMIT] [DATA]
# then: python benchmarks/verdict_table.py OUT/baseline OUT/v2 --program baseline --after-program v2
OUT=${1:?usage: run.sh OUT [LIMIT] [DATA]}
LIMIT=${2:-60}
SHARED=../shared/benchmarks
DATA=${3:-$SHARED/sparc-public}
limit=(--limit "$LIMIT")
[ "$LIMIT" = all ] && limit=()
export TEXT2SQL_N_THREADS=1
for program in baseline v2; do
  .venv/bin/text2sql evaluate --data "$DATA" --databases $SHARED/spider-public --split dev \
    --program $program "${limit[@]}" --out "$OUT/$program" > "$OUT.$program.log" 2>&1 &
done
wait
