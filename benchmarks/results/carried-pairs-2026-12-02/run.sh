#!/bin/bash
# Solved pairs carried from other databases (issue "Compile once on 138 databases", second design): V2 as shipped
# ("before") against V2 shown, with each question, the 3 spider-train pairs nearest its masked question ("after"),
# side by side at one commit, one model thread each, default settings. Resumable (`--out` resumes).
#   LIMIT=N bash run.sh OUT spider-dev  (Spider dev's first N: both side by side)
# then: python benchmarks/verdict_table.py OUT/before/spider-dev OUT/after/spider-dev
#       python benchmarks/lint_firings.py --any-reading OUT/before/spider-dev
#       python benchmarks/lint_firings.py --any-reading OUT/after/spider-dev
OUT=$(realpath "${1:?usage: run.sh OUT spider-dev}")
SET=${2:?usage: run.sh OUT spider-dev}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
T2S=$REPO/.venv/bin/text2sql
B=$REPO/../shared/benchmarks
case $SET in
  spider-dev)
    run() {  # NAME [ARGS...]
      local name=$1; shift
      mkdir -p "$OUT/$name" && cd "$OUT/$name" || exit 1
      TEXT2SQL_N_THREADS=1 "$T2S" evaluate --data "$B/spider-public" --split dev --program v2 "$@" \
        ${LIMIT:+--limit $LIMIT} --out spider-dev > spider-dev.log 2>&1
    }
    run before &
    run after --carried "$B/spider-train" &
    wait ;;
esac
