#!/bin/bash
# V2 on the bundled database's training questions (data/train.json, first 40), the whole 8,300-token schema
# (default) against the linked tables (--schema-budget 2500: the top 5 tables and those that join them), side by
# side, one model thread each. Run from the repository root; resumable.
#   bash benchmarks/results/linked-view-2026-11-29/run.sh
R=benchmarks/results/linked-view-2026-11-29
export TEXT2SQL_N_THREADS=1
.venv/bin/text2sql evaluate --split train --limit 40 --program v2 --out $R/whole > $R/whole.log 2>&1 &
.venv/bin/text2sql evaluate --split train --limit 40 --program v2 --schema-budget 2500 --out $R/linked > $R/linked.log 2>&1 &
wait
