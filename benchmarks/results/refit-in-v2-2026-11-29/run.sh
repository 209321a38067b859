#!/bin/bash
# The refit verifier in an actual V2 run: V2 at one commit with the verifier fitted on 5 databases (080f0d2's
# verifier.json, "before") and with the refit shipped at 3a7759f ("after"), side by side, one model thread each,
# default settings. Sets: SParC dev over the five of its databases neither file was fitted on ("sparc-clean", every
# turn of their 117 conversations) and Spider dev (LIMIT=N: its first N). Resumable (`--out` resumes).
#   git worktree add /tmp/wa COMMIT && pip install --no-deps --target /tmp/snap/after /tmp/wa
#   cp -r /tmp/snap/after /tmp/snap/before
#   git show 080f0d2:programs/agents/verifier.json > /tmp/snap/before/text2sql_dspy/programs/agents/verifier.json
#   bash run.sh OUT SET    (runs before and after side by side)
# then: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET
OUT=$(realpath "${1:?usage: run.sh OUT SET}")
SET=${2:?usage: run.sh OUT SET}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/.venv/bin/python
B=$REPO/../shared/benchmarks
CLEAN="cre_Doc_Template_Mgt concert_singer pets_1 network_1 tvshow"
mkdir -p "$OUT/sparc-clean-data"
$PY - "$B/sparc-public/dev.json" "$OUT/sparc-clean-data/dev.json" $CLEAN <<'PY'
import json, sys
source, target, *clean = sys.argv[1:]
kept = [c for c in json.load(open(source, encoding="utf-8")) if c["database_id"] in clean]
json.dump(kept, open(target, "w", encoding="utf-8"))
PY
run() {  # NAME
  mkdir -p "$OUT/$1" && cd "$OUT/$1" || exit 1
  export TEXT2SQL_N_THREADS=1 PYTHONPATH=/tmp/snap/$1
  limit=${LIMIT:+--limit $LIMIT}
  case $SET in
    sparc-clean) $PY -m text2sql_dspy.cli evaluate --data "$OUT/sparc-clean-data" --split dev \
                   --databases "$B/spider-public" --program v2 --out sparc-clean > sparc-clean.log 2>&1 ;;
    spider-dev) $PY -m text2sql_dspy.cli evaluate --data "$B/spider-public" --split dev --program v2 $limit \
                  --out spider-dev > spider-dev.log 2>&1 ;;
  esac
}
run before &
run after &
wait
