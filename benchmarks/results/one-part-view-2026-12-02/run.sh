#!/bin/bash
# V2 over a merged 300-table database, with the one-part view (after) and without it (before), side by side, one
# model thread each. Run from the repository root; resumable.
#   bash benchmarks/results/one-part-view-2026-12-02/run.sh OUT train   # 50 questions of 25 spider-train databases
#   bash benchmarks/results/one-part-view-2026-12-02/run.sh OUT dev     # 10 questions of each Spider dev database
# then: python benchmarks/verdict_table.py OUT/before OUT/after
OUT=${1:?usage: run.sh OUT train|dev}
SET=${2:?usage: run.sh OUT train|dev}
export TEXT2SQL_N_THREADS=1
if [ "$SET" = train ]; then
  .venv/bin/python benchmarks/merge_schemas.py --spider ../shared/benchmarks/spider-train --split train \
    --databases 25 --questions-per-db 2 --out "$OUT/data" > "$OUT.merge.log"
  SPLIT=train
else
  .venv/bin/python benchmarks/merge_schemas.py --out "$OUT/data" --questions-per-db 10 > "$OUT.merge.log"
  SPLIT=dev
fi
# before: every retrieved table rendered, as until this change
.venv/bin/python -c 'import sys, functools
from text2sql_dspy.programs.agents import base
base.schema_view = functools.partial(base.schema_view, keep_to_one_part=False)
from text2sql_dspy.cli import main
sys.exit(main(sys.argv[1:]))' evaluate --data "$OUT/data" --split $SPLIT --program v2 --out "$OUT/before" \
  > "$OUT.before.log" 2>&1 &
.venv/bin/text2sql evaluate --data "$OUT/data" --split $SPLIT --program v2 --out "$OUT/after" > "$OUT.after.log" 2>&1 &
wait
