#!/bin/bash
# The issues "Know when an answer is wrong" and "Follow-ups that continue the query": V2 before (f7b08ff) and
# after, on Spider dev (289), bird-public (129, with evidence) and SParC dev (844 turns, with history), the two
# runs side by side on one machine, one model thread each, default settings. Resumable (`--out` resumes).
#   git worktree add /tmp/wb f7b08ff && pip install --no-deps --target /tmp/snap/f7b08ff /tmp/wb
#   git worktree add /tmp/wa 3121d62 && pip install --no-deps --target /tmp/snap/head /tmp/wa
#   bash run.sh OUT
# then: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET --verifier programs/agents/verifier.json
# (Spider dev's "after" ran at 22e3236, whose program differs from 3121d62's only in the words of the verdict,
# which --verifier reads again by 3121d62's rule.)
OUT=$(realpath "${1:?usage: run.sh OUT}")
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/.venv/bin/python
B=$REPO/../shared/benchmarks
run() {  # NAME SNAPSHOT
  mkdir -p "$OUT/$1" && cd "$OUT/$1" || exit 1
  export TEXT2SQL_N_THREADS=1 PYTHONPATH=$2
  $PY -m text2sql_dspy.cli evaluate --data "$B/spider-public" --split dev --program v2 --out spider-dev > spider-dev.log 2>&1
  $PY -m text2sql_dspy.cli evaluate --data "$B/bird-public" --split dev --program v2 --out bird > bird.log 2>&1
  $PY -m text2sql_dspy.cli evaluate --data "$B/sparc-public" --split dev --databases "$B/spider-public" --program v2 \
    --out sparc > sparc.log 2>&1
}
run before /tmp/snap/f7b08ff &
run after /tmp/snap/head &
wait
