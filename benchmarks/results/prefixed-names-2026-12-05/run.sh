#!/bin/bash
# The 5 Spider dev databases merged into one SQLite file of 17 tables with no distractors (every table renamed
# <database>__<table>, the whole schema shown), against the same 100 questions on their own databases; V2, default
# settings, side by side, one model thread each. Run from the repository root; resumable.
#   bash benchmarks/results/prefixed-names-2026-12-05/run.sh OUT
# then: python benchmarks/verdict_table.py OUT/own OUT/merged17
OUT=${1:?usage: run.sh OUT}
export TEXT2SQL_N_THREADS=1
.venv/bin/python benchmarks/merge_schemas.py --out "$OUT/data" --questions-per-db 20 --min-tables 0 > "$OUT.merge.log" || exit 1
.venv/bin/text2sql evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/merged17" > "$OUT.merged17.log" 2>&1 &
.venv/bin/text2sql evaluate --data "$OUT/data" --split own --databases ../shared/benchmarks/spider-public --program v2 \
  --out "$OUT/own" > "$OUT.own.log" 2>&1 &
wait
