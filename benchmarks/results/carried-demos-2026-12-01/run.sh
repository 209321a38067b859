#!/bin/bash
# Worked examples carried from other databases (issue "Compile once on 138 databases"): V2 as shipped ("before")
# against V2 compiled on spider-train with carried demos ("after"), side by side at one commit, one model thread
# each, default settings. Resumable (`--out` resumes).
#   bash run.sh OUT compile             (the compile, in OUT/compiled/: spider-train only, by whole databases)
#   LIMIT=N bash run.sh OUT spider-dev  (Spider dev's first N: both programs side by side)
# then: python benchmarks/verdict_table.py OUT/before/spider-dev OUT/after/spider-dev --after-program OUT/compiled/v2-carried.json
#       python benchmarks/lint_firings.py --any-reading OUT/before/spider-dev
#       python benchmarks/lint_firings.py --any-reading --program OUT/compiled/v2-carried.json OUT/after/spider-dev
OUT=$(realpath "${1:?usage: run.sh OUT compile|spider-dev}")
SET=${2:?usage: run.sh OUT compile|spider-dev}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
T2S=$REPO/.venv/bin/text2sql
B=$REPO/../shared/benchmarks
COMPILED=$OUT/compiled/v2-carried.json
case $SET in
  compile)
    mkdir -p "$OUT/compiled"
    "$T2S" compile --program v2 --optimizer bootstrap --data "$B/spider-train" --train-databases 96 \
      --per-database 1 --train-limit 96 --dev-limit 0 --max-demos 6 --keep-demos 4 --varied-first --no-learn \
      --carry-demos \
      --seed 0 --out "$COMPILED" > "$OUT/compiled/compile.log" 2>&1 ;;
  spider-dev)
    run() {  # NAME PROGRAM
      mkdir -p "$OUT/$1" && cd "$OUT/$1" || exit 1
      TEXT2SQL_N_THREADS=1 "$T2S" evaluate --data "$B/spider-public" --split dev --program "$2" \
        ${LIMIT:+--limit $LIMIT} --out spider-dev > spider-dev.log 2>&1
    }
    run before v2 &
    run after "$COMPILED" &
    wait ;;
esac
