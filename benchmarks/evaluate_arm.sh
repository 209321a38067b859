#!/bin/bash
# V2 on one split of a before/after comparison, from the arm's own folder, so that the arm's snapshot (a
# `pip install --no-deps --target SNAPSHOT` of a worktree at its commit), not the checkout, is imported; one model
# thread; resumable. Writes SUB/out/ARM/SET (records) and SET.log.
#   bash benchmarks/evaluate_arm.sh SUB ARM SNAPSHOT SET [more evaluate options]      (reads SUB/SET/affected.json)
SUB=$(realpath "${1:?usage: evaluate_arm.sh SUB ARM SNAPSHOT SET [options]}")
ARM=$2 SNAP=$3 SET=$4
shift 4
REPO=$(cd "$(dirname "$0")/.." && pwd)
O=$SUB/out/$ARM
mkdir -p "$O" && cd "$O" || exit 1
TEXT2SQL_N_THREADS=1 PYTHONPATH=$SNAP "$REPO/.venv/bin/python" -m text2sql_dspy.cli evaluate --data "$SUB/$SET" \
  --split affected --program v2 --out "$SET" "$@" > "$SET.log" 2>&1
