#!/bin/bash
# V2 of one arm of a before/after comparison on whole held-out sets, imported from the arm's snapshot (a
# `pip install --no-deps --target SNAPSHOT` of a worktree at its commit), not from the checkout; one model thread a
# run, default settings. Resumable (`--out` resumes). Writes OUT/NAME/SET (an evaluate run) and OUT/NAME/SET.log.
#   git worktree add /tmp/wb BEFORE && .venv/bin/pip install --no-deps --target /tmp/snap/before /tmp/wb   (likewise after)
#   bash benchmarks/evaluate_sets.sh OUT NAME SNAPSHOT SET...
#     SET: bird-off (bird-public dev, evidence off), bird-on (with BIRD's evidence), spider-dev, sparc (SParC dev over
#     spider-public's databases), bundled (the bundled data's test split, 72 questions); LIMIT=N: the first N questions
#     (not for sparc). Two arms side by side:
#   bash benchmarks/evaluate_sets.sh OUT before /tmp/snap/before spider-dev & bash benchmarks/evaluate_sets.sh OUT after /tmp/snap/after spider-dev & wait
# then: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET
# The sets are read from ../shared/benchmarks beside the repository (BENCHMARKS: another folder); PYTHON: another
# interpreter than the repository's .venv (the tests' stand-in).
OUT=$(realpath -m "${1:?usage: evaluate_sets.sh OUT NAME SNAPSHOT SET...}")
NAME=${2:?usage: evaluate_sets.sh OUT NAME SNAPSHOT SET...} SNAP=${3:?usage: evaluate_sets.sh OUT NAME SNAPSHOT SET...}
shift 3
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
B=${BENCHMARKS:-$REPO/../shared/benchmarks}
mkdir -p "$OUT/$NAME" && cd "$OUT/$NAME" || exit 1
export TEXT2SQL_N_THREADS=1 PYTHONPATH=$SNAP
limit=${LIMIT:+--limit $LIMIT}
for set in "$@"; do
  case $set in
    bird-off) $PY -m text2sql_dspy.cli evaluate --data "$B/bird-public" --split dev --program v2 --evidence off $limit --out bird-off > bird-off.log 2>&1 ;;
    bird-on) $PY -m text2sql_dspy.cli evaluate --data "$B/bird-public" --split dev --program v2 $limit --out bird-on > bird-on.log 2>&1 ;;
    spider-dev) $PY -m text2sql_dspy.cli evaluate --data "$B/spider-public" --split dev --program v2 $limit --out spider-dev > spider-dev.log 2>&1 ;;
    sparc) $PY -m text2sql_dspy.cli evaluate --data "$B/sparc-public" --split dev --databases "$B/spider-public" --program v2 --out sparc > sparc.log 2>&1 ;;
    bundled) $PY -m text2sql_dspy.cli evaluate --split test --program v2 $limit --out bundled > bundled.log 2>&1 ;;
    *) echo "evaluate_sets.sh: unknown set $set (bird-off, bird-on, spider-dev, sparc, bundled)" >&2; exit 2 ;;
  esac
done
