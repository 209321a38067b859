#!/bin/bash
# The issue "Right on real databases": V2 at aee9e15 (before) and b08ca82 (after), on bird-public (129, evidence off and on)
# and Spider dev (289), one model thread a run, default settings. Resumable (`--out` resumes).
#   git worktree add /tmp/wb aee9e15 && pip install --no-deps --target /tmp/snap/before /tmp/wb
#   git worktree add /tmp/wa b08ca82 && pip install --no-deps --target /tmp/snap/after /tmp/wa
#   bash run.sh OUT NAME SNAPSHOT SET...     (SET: bird-off, bird-on, spider-dev, sparc; LIMIT=N: the first N)
# then: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET
OUT=$(realpath "${1:?usage: run.sh OUT NAME SNAPSHOT SET...}")
NAME=$2 SNAP=$3
shift 3
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/.venv/bin/python
B=$REPO/../shared/benchmarks
mkdir -p "$OUT/$NAME" && cd "$OUT/$NAME" || exit 1
export TEXT2SQL_N_THREADS=1 PYTHONPATH=$SNAP
limit=${LIMIT:+--limit $LIMIT}
for set in "$@"; do
  case $set in
    bird-off) $PY -m text2sql_dspy.cli evaluate --data "$B/bird-public" --split dev --program v2 --evidence off $limit --out bird-off > bird-off.log 2>&1 ;;
    bird-on) $PY -m text2sql_dspy.cli evaluate --data "$B/bird-public" --split dev --program v2 $limit --out bird-on > bird-on.log 2>&1 ;;
    spider-dev) $PY -m text2sql_dspy.cli evaluate --data "$B/spider-public" --split dev --program v2 $limit --out spider-dev > spider-dev.log 2>&1 ;;
    sparc) $PY -m text2sql_dspy.cli evaluate --data "$B/sparc-public" --split dev --databases "$B/spider-public" --program v2 --out sparc > sparc.log 2>&1 ;;
  esac
done
