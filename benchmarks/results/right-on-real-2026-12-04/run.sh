#!/bin/bash
# The issue "Right on real databases" measured again in one sitting: V2 at aee9e15 (the main that issue was filed
# against) on the sets of ../verifier-live-2026-12-04/, whose `after` arm (V2 at 57f548c) it is compared with. One
# model thread, default settings; aee9e15 scores BIRD by multisets, so its bird runs are then copied and resumed
# with the after snapshot, which re-scores every record by BIRD's rule (sets) and asks nothing of the model.
#   git worktree add /tmp/w54 aee9e15 && pip install --no-deps --target /tmp/snap/aee9e15 /tmp/w54
#   bash benchmarks/results/right-on-real-2026-12-04/run.sh OUT [SET ...]   (OUT: the verifier-live run's OUT)
# then: python benchmarks/verdict_table.py OUT/aee9e15/SET OUT/after/SET   (bird: OUT/aee9e15/SET-rescored)
OUT=$(realpath "${1:?usage: run.sh OUT [SET ...]}")
shift
SETS=${*:-bird-off bird-on spider-dev sparc}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck disable=SC2086
bash "$REPO/benchmarks/results/right-on-real-2026-11-29/run.sh" "$OUT" aee9e15 /tmp/snap/aee9e15 $SETS
cd "$OUT/aee9e15" || exit 1
for set in $SETS; do
  case $set in
    bird-*) rm -rf "$set-rescored" && cp -r "$set" "$set-rescored"
            evidence=$([ "$set" = bird-off ] && echo "--evidence off")
            # shellcheck disable=SC2086
            TEXT2SQL_N_THREADS=1 PYTHONPATH=/tmp/snap/after "$REPO/.venv/bin/python" -m text2sql_dspy.cli evaluate \
              --data "$REPO/../shared/benchmarks/bird-public" --split dev --program v2 $evidence \
              --out "$set-rescored" > "$set-rescored.log" 2>&1 ;;
  esac
done
