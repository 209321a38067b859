#!/bin/bash
# V2 on the merged 301-table database (10 questions of each Spider dev database, 50 in all), with and without the
# shipped question adapter, side by side, one model thread each. Run from the repository root; resumable.
#   bash benchmarks/results/question-adapter-2026-12-02/run.sh OUT
# then: python benchmarks/verdict_table.py OUT/before OUT/after
OUT=${1:?usage: run.sh OUT}
export TEXT2SQL_N_THREADS=1
.venv/bin/python benchmarks/merge_schemas.py --out "$OUT/data" --questions-per-db 10 > "$OUT.merge.log"
# before: the bare MiniLM cosine, as until this change (the adapter is not loaded)
.venv/bin/python -c 'import sys
from text2sql_dspy.programs.retrieval import retriever
retriever.load_adapter = lambda: None
from text2sql_dspy.cli import main
sys.exit(main(sys.argv[1:]))' evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/before" \
  > "$OUT.before.log" 2>&1 &
.venv/bin/text2sql evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/after" > "$OUT.after.log" 2>&1 &
wait
