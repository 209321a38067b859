#!/bin/bash
# V2 on the merged 301-table database against the same 50 questions (10 of each Spider dev database) on their own
# databases, one model thread, default settings. Run from the repository root; resumable (`--out` resumes).
#   bash benchmarks/results/large-schema-2026-11-29/run.sh OUT
OUT=${1:?usage: run.sh OUT}
export TEXT2SQL_N_THREADS=1
.venv/bin/python benchmarks/merge_schemas.py --out "$OUT/data" --questions-per-db 10
.venv/bin/text2sql evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/merged" > "$OUT/merged.log" 2>&1
.venv/bin/text2sql evaluate --data "$OUT/data" --split own --databases ../shared/benchmarks/spider-public \
  --program v2 --out "$OUT/own" > "$OUT/own.log" 2>&1
# then: python benchmarks/verdict_table.py OUT/own OUT/merged
