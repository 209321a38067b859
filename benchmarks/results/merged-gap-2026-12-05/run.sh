#!/bin/bash
# V2 on the same Spider dev questions twice, side by side in one sitting, one model thread each, default settings:
# over the merged 300-table database (dev) and over their own databases (own). Run from the repository root;
# resumable.
#   bash benchmarks/results/merged-gap-2026-12-05/run.sh OUT [PER_DB]     # PER_DB questions of each dev database (20)
# then: python benchmarks/verdict_table.py OUT/own OUT/merged
OUT=${1:?usage: run.sh OUT [PER_DB]}
PER_DB=${2:-20}
B=../shared/benchmarks
export TEXT2SQL_N_THREADS=1
mkdir -p "$OUT"
.venv/bin/python benchmarks/merge_schemas.py --out "$OUT/data" --questions-per-db "$PER_DB" > "$OUT/merge.log" || exit 1
.venv/bin/text2sql evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/merged" > "$OUT/merged.log" 2>&1 &
.venv/bin/text2sql evaluate --data "$OUT/data" --split own --databases "$B/spider-public" --program v2 --out "$OUT/own" \
  > "$OUT/own.log" 2>&1 &
wait
