#!/bin/bash
# Issue 57's merged gap: V2 on the same Spider dev questions twice, side by side in one sitting, one model thread each,
# default settings, the checkout's code: over the merged 300-table database that benchmarks/merge_schemas.py builds
# (OUT/merged) and over the questions' own databases (OUT/own). Resumable (`--out` resumes). Writes OUT/data (the
# merged benchmark), OUT/merge.log, OUT/merged.log and OUT/own.log.
#   bash benchmarks/merged_gap.sh OUT [PER_DB] [MERGE_OPTIONS...]   # PER_DB questions of each dev database (default 20);
#                                                                  # more merge_schemas.py options, as --table-order stored
# then: python benchmarks/verdict_table.py OUT/own OUT/merged
# The sets are read from ../shared/benchmarks beside the repository (BENCHMARKS: another folder); OWN: the own
# databases' Spider-format folder (default: spider-public's); TEXT2SQL, PYTHON: other commands than the repository's
# .venv ones (the tests' stand-ins).
OUT=${1:?usage: merged_gap.sh OUT [PER_DB] [MERGE_OPTIONS...]}
PER_DB=${2:-20}
shift $(($# < 2 ? $# : 2))
REPO=$(cd "$(dirname "$0")/.." && pwd)
T2S=${TEXT2SQL:-$REPO/.venv/bin/text2sql}
PY=${PYTHON:-$REPO/.venv/bin/python}
B=${BENCHMARKS:-$REPO/../shared/benchmarks}
export TEXT2SQL_N_THREADS=1
mkdir -p "$OUT"
"$PY" "$REPO/benchmarks/merge_schemas.py" --spider "$B/spider-public" --train "$B/spider-train" --out "$OUT/data" \
  --questions-per-db "$PER_DB" "$@" > "$OUT/merge.log" || exit 1
"$T2S" evaluate --data "$OUT/data" --split dev --program v2 --out "$OUT/merged" > "$OUT/merged.log" 2>&1 &
"$T2S" evaluate --data "$OUT/data" --split own --databases "${OWN:-$B/spider-public}" --program v2 --out "$OUT/own" \
  > "$OUT/own.log" 2>&1 &
wait
