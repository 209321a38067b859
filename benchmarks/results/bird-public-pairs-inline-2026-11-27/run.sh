#!/bin/bash
# Issue 37 latency and store at 8487cc1 (pairs inline, facts budget 300): bird-public first 60, evidence off,
# three runs side by side, 1 thread each, the disk KV cache off (earlier runs' states would serve whole prompts).
# A: docs + lookup + the 69 pairs of questions 61-129 as the store, budget 300 (the default).
# B: the same with the budget lifted (100000): all 4 nearest pairs inline.
# P: plain (the SQLite file copied without its docs, --values off, no store), first 30, for the latency ratio.
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
R=$OUT
run() { env PYTHONPATH=$1 /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate --split dev --program v2 --evidence off "${@:2}"; }
run /tmp/s6-pkg --data /work/shared/benchmarks/bird-public --limit 60 --examples /work/runs/s5/bird-store.sqlite --out $R/A > $R/A.log 2>&1 &
run /tmp/s6b-pkg --data /work/shared/benchmarks/bird-public --limit 60 --examples /work/runs/s5/bird-store.sqlite --out $R/B > $R/B.log 2>&1 &
run /tmp/s6-pkg --data /work/runs/s5/bird-plain --limit 30 --values off --out $R/P > $R/P.log 2>&1 &
wait
echo ALLDONE > $R/done
