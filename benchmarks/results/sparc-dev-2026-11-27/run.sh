#!/bin/bash
# Issue 35's table: V2 at 88f7164 on SParC dev (844 turns), with history and alone, the two runs advanced
# together in chunks of turns so that each chunk's two answers come from the same machine; resumable
# (`text2sql evaluate --out` resumes from the records there).
#   git worktree add /tmp/w88 88f7164 && pip install --no-deps --target /tmp/t2s-88f7164 /tmp/w88
#   bash run.sh OUT       (OUT: a folder holding history-on/ and history-off/; this folder's records resume it)
# Model runs at one thread each, the disk KV cache off; `python summary.py OUT` prints the table.
OUT=$(realpath "${1:?usage: run.sh OUT}")
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
cd /tmp
export PYTHONPATH=/tmp/t2s-88f7164 TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
PY=$REPO/.venv/bin/python
SHARED=$REPO/../shared/benchmarks
for L in 100 200 300 400 500 600 700 844; do
  echo "chunk $L start $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/  */ /g')" >> "$OUT/chunks.log"
  for H in on off; do
    $PY -m text2sql_dspy.cli evaluate --data "$SHARED/sparc-public" --databases "$SHARED/spider-public" \
      --split dev --program v2 --limit $L --history $H --out "$OUT/history-$H" >> "$OUT/run-$H.log" 2>&1 &
  done
  wait
  echo "chunk $L done $(date -u +%FT%TZ)" >> "$OUT/chunks.log"
done
