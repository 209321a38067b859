#!/bin/bash
# Issue 57's latency ratio: the baseline and V2 side by side on the same questions, one model thread each, default
# settings, the checkout's code. Resumable (`--out` resumes). Writes OUT/baseline and OUT/v2 (evaluate runs) and
# OUT.baseline.log, OUT.v2.log.
#   bash benchmarks/latency_ratio.sh OUT bird [LIMIT]          bird-public dev, the first LIMIT questions (default: all
#                                                              129), BIRD's evidence shown and BIRD's rule scoring
#   bash benchmarks/latency_ratio.sh OUT sparc [LIMIT] [DATA]  SParC dev (or DATA, a folder of SParC-format dev.json
#                                                              over spider-public's databases), the first LIMIT turns
#                                                              (default 60; all: every turn)
#   bash benchmarks/latency_ratio.sh OUT spread [PER]          SParC dev's first PER conversations of each database
#                                                              (default 2), written to OUT/data/dev.json, every turn
# then: python benchmarks/verdict_table.py OUT/baseline OUT/v2 --program baseline --after-program v2
# The sets are read from ../shared/benchmarks beside the repository (BENCHMARKS: another folder); TEXT2SQL, PYTHON:
# other commands than the repository's .venv ones (the tests' stand-ins).
usage="usage: latency_ratio.sh OUT bird [LIMIT] | OUT sparc [LIMIT] [DATA] | OUT spread [PER]"
OUT=${1:?$usage} SET=${2:?$usage}
REPO=$(cd "$(dirname "$0")/.." && pwd)
T2S=${TEXT2SQL:-$REPO/.venv/bin/text2sql}
PY=${PYTHON:-$REPO/.venv/bin/python}
B=${BENCHMARKS:-$REPO/../shared/benchmarks}
export TEXT2SQL_N_THREADS=1
side_by_side() {  # the evaluate options both programs share
  for program in baseline v2; do
    "$T2S" evaluate "$@" --program $program --out "$OUT/$program" > "$OUT.$program.log" 2>&1 &
  done
  wait
}
sparc() {  # LIMIT DATA
  limit=(--limit "$1")
  [ "$1" = all ] && limit=()
  side_by_side --data "$2" --databases "$B/spider-public" --split dev "${limit[@]}"
}
case $SET in
  bird) side_by_side --data "$B/bird-public" --split dev ${3:+--limit $3} ;;
  sparc) sparc "${3:-60}" "${4:-$B/sparc-public}" ;;
  spread)
    mkdir -p "$OUT/data"
    "$PY" - "$B/sparc-public/dev.json" "$OUT/data/dev.json" "${3:-2}" <<'PY' || exit 1
import collections, json, sys
rows, kept, seen = json.load(open(sys.argv[1])), [], collections.Counter()
for row in rows:
    seen[row["database_id"]] += 1
    if seen[row["database_id"]] <= int(sys.argv[3]):
        kept.append(row)
json.dump(kept, open(sys.argv[2], "w"), indent=1)
print(f"{len(kept)} conversations, {sum(len(r['interaction']) for r in kept)} turns, {len(seen)} databases")
PY
    sparc all "$OUT/data" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
