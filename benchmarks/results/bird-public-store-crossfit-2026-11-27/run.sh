#!/bin/bash
# Issue 37, store row, cross-fitted over all 129 bird-public dev questions, evidence off, at affc104
# (pip install --no-deps --target /tmp/t2s-affc104), three runs side by side, 1 thread each, disk KV cache off.
# S1: the 69 pairs of questions 61-129 as the store, answering questions 1-60
# S2: the 60 pairs of questions 1-60 as the store, answering questions 61-129 (bird-61-129/dev.json)
# N:  no store, all 129 (docs beside the SQLite file and the value lookup, as in S1 and S2)
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
R=${OUT:-/work/runs/s10}
run() { env PYTHONPATH=/tmp/t2s-affc104 /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate --split dev --program v2 --evidence off "$@"; }
run --data /work/shared/benchmarks/bird-public --limit 60 --examples $R/store-second.sqlite --out $R/S1 > $R/S1.log 2>&1 &
run --data $R/bird-61-129 --examples $R/store-first.sqlite --out $R/S2 > $R/S2.log 2>&1 &
run --data /work/shared/benchmarks/bird-public --out $R/N > $R/N.log 2>&1 &
wait
echo ALLDONE > $R/done
