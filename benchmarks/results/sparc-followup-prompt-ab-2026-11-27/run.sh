#!/bin/bash
# A/B on SParC dev's every 8th conversation (i % 8 == 3: 37 conversations, 103 turns), history on, V2:
# base (the commit) against the follow-up prompt patch; both at one thread, disk KV cache off, side by side.
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
OUT=/work/runs/s9/ab
for V in base prompt; do
  PYTHONPATH=/tmp/t2s-$V /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate --data $OUT/sparc8 \
    --databases /work/shared/benchmarks/spider-public --split dev --program v2 --history on --out $OUT/$V >> $OUT/run-$V.log 2>&1 &
done
wait
