#!/bin/bash
# 2026-11-26, d6cb1e5 (answers as 4d7b675 does), installed with pip install --no-deps --target /tmp/d6-pkg. Bundled test 72 and Spider dev 61-289 (resuming 4d7b675's first 60), 1 thread each.
cd /tmp
export TEXT2SQL_N_THREADS=1
S=/work/shared/benchmarks
PY="env PYTHONPATH=/tmp/d6-pkg /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate"
$PY --split test --program v2 --out /work/runs/s5/bundled72 > /work/runs/s5/bundled72.log 2>&1 &
$PY --data $S/spider-public --split dev --program v2 --limit 289 --out /work/runs/s5/spider289 > /work/runs/s5/spider289.log 2>&1 &
wait
echo ALLDONE > /work/runs/s5/done
