#!/bin/bash
# A namespace shown as its own database (68e7077) against the code before it (c85a175), V2, default settings, one
# model thread each, two runs side by side: on spider-train's 5 databases merged with distractors into 302 tables
# (where designs are chosen) and on the Spider dev merged benchmark (301 tables, held out), both built with
# `--table-order stored`; then the same questions on their own databases with the after arm. Each arm runs from a
# snapshot (`pip install --no-deps --target`) of a worktree at its commit. Run from the repository root; resumable.
#   bash benchmarks/results/namespace-as-database-2026-12-06/run.sh OUT
# then: python benchmarks/verdict_table.py OUT/SET/own OUT/SET/after   (and before; SET: train, dev)
OUT=$(realpath -m "${1:?usage: run.sh OUT}")
REPO=$(pwd)
B=$REPO/../shared/benchmarks
export TEXT2SQL_N_THREADS=1
for arm in before:c85a175 after:68e7077; do
  name=${arm%%:*} commit=${arm##*:}
  [ -d "$OUT/snap/$name" ] || { git worktree add -f "$OUT/w-$name" "$commit" &&
    .venv/bin/pip install -q --no-deps --target "$OUT/snap/$name" "$OUT/w-$name"; } || exit 1
done
.venv/bin/python benchmarks/merge_schemas.py --spider "$B/spider-train" --split train --databases 5 --questions-per-db 20 \
  --min-tables 300 --table-order stored --out "$OUT/train/data" > "$OUT/train.merge.log" || exit 1
.venv/bin/python benchmarks/merge_schemas.py --questions-per-db 20 --table-order stored --out "$OUT/dev/data" \
  > "$OUT/dev.merge.log" || exit 1
arm() {  # arm NAME SET SPLIT OUTNAME [options]: V2 from the arm's snapshot
  mkdir -p "$OUT/$2" && (cd "$OUT/$2" && PYTHONPATH=$OUT/snap/$1 "$REPO/.venv/bin/python" -m text2sql_dspy.cli \
    evaluate --data "$OUT/$2/data" --split "$3" --program v2 --out "$4" "${@:5}" > "$4.log" 2>&1)
}
arm before train train before & arm before dev dev before & wait
arm after train train after & arm after dev dev after & wait
arm after train own own --databases "$B/spider-train" & arm after dev own own --databases "$B/spider-public" & wait
