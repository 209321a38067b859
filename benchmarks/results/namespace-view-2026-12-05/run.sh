#!/bin/bash
# The namespace view (c42771d) against the code before it (27d38ab), V2, default settings, one model thread each, side
# by side: on spider-train's 5 databases merged with distractors into 302 tables (where the design was chosen), then
# on the Spider dev merged benchmark of ../merged-gap-2026-12-05/ (301 tables, held out), then the same questions on
# their own databases. Each arm runs from a snapshot (`pip install --no-deps --target`) of a worktree at its commit.
# Run from the repository root; resumable.
#   bash benchmarks/results/namespace-view-2026-12-05/run.sh OUT
# then: python benchmarks/verdict_table.py OUT/train/before/merged OUT/train/after/merged   (and dev/, own/)
OUT=$(realpath -m "${1:?usage: run.sh OUT}")
REPO=$(pwd)
B=$REPO/../shared/benchmarks
export TEXT2SQL_N_THREADS=1
for arm in before:27d38ab after:c42771d; do
  name=${arm%%:*} commit=${arm##*:}
  [ -d "$OUT/snap/$name" ] || { git worktree add -f "$OUT/w-$name" "$commit" &&
    .venv/bin/pip install -q --no-deps --target "$OUT/snap/$name" "$OUT/w-$name"; } || exit 1
done
.venv/bin/python benchmarks/merge_schemas.py --spider "$B/spider-train" --split train --databases 5 --questions-per-db 20 \
  --min-tables 300 --out "$OUT/train/data" > "$OUT/train.merge.log" || exit 1
.venv/bin/python benchmarks/merge_schemas.py --out "$OUT/dev/data" --questions-per-db 20 > "$OUT/dev.merge.log" || exit 1
arm() {  # arm NAME SET SPLIT OUTNAME [options]: V2 from the arm's snapshot, in the arm's folder
  mkdir -p "$OUT/$2/$1" && (cd "$OUT/$2/$1" && PYTHONPATH=$OUT/snap/$1 "$REPO/.venv/bin/python" -m text2sql_dspy.cli \
    evaluate --data "$OUT/$2/data" --split "$3" --program v2 --out "$4" "${@:5}" > "$4.log" 2>&1)
}
arm before train train merged & arm after train train merged & wait
arm before dev dev merged & arm after dev dev merged & wait
arm after dev own own --databases "$B/spider-public" & arm after train own own --databases "$B/spider-train" & wait
