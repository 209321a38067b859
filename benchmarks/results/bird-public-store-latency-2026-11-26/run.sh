#!/bin/bash
# Issue 37 latency and store: bird-public first 60, evidence off, side by side, 1 thread each.
# full: BIRD docs (beside the file) + value lookup + the 69 pairs of questions 61-129 as the store.
# plain: the same SQLite file copied without its docs, --values off, no store.
cd /tmp
export TEXT2SQL_N_THREADS=1
PY="env PYTHONPATH=/tmp/d6-pkg /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate"
$PY --data /work/shared/benchmarks/bird-public --split dev --program v2 --limit 60 --evidence off --examples /work/runs/s5/bird-store.sqlite --out /work/runs/s5/bird60-full > /work/runs/s5/bird60-full.log 2>&1 &
$PY --data /work/runs/s5/bird-plain --split dev --program v2 --limit 60 --evidence off --values off --out /work/runs/s5/bird60-plain > /work/runs/s5/bird60-plain.log 2>&1 &
wait
echo ALLDONE > /work/runs/s5/latency.done
