#!/bin/bash
# V2 on the held-out questions the aggregate repairs can touch (affected.py), one model thread, from the arm's own
# folder so that its snapshot, not the checkout, is imported. Resumable.
#   python benchmarks/results/ungrouped-aggregate-2026-12-05/affected.py /tmp/sub
#   git worktree add /tmp/wb 0ffcbaa && pip install --no-deps --target /tmp/snap/before /tmp/wb   (likewise each arm)
#   bash benchmarks/results/ungrouped-aggregate-2026-12-05/run.sh /tmp/sub ARM /tmp/snap/ARM
#   python benchmarks/compare_runs.py /tmp/sub/out/before/SET /tmp/sub/out/ARM/SET
SUB=$(realpath "${1:?usage: run.sh SUB ARM SNAPSHOT}")
ARM=$2 SNAP=$3
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/.venv/bin/python
O=$SUB/out/$ARM
mkdir -p "$O" && cd "$O" || exit 1
export TEXT2SQL_N_THREADS=1 PYTHONPATH=$SNAP
$PY -m text2sql_dspy.cli evaluate --data "$SUB/spider-dev" --split affected --program v2 --out spider-dev > spider-dev.log 2>&1
$PY -m text2sql_dspy.cli evaluate --data "$SUB/bird-on" --split affected --program v2 --out bird-on > bird-on.log 2>&1
$PY -m text2sql_dspy.cli evaluate --data "$SUB/sparc" --split affected --databases "$REPO/../shared/benchmarks/spider-public" \
  --program v2 --out sparc > sparc.log 2>&1
