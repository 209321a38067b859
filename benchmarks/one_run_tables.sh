#!/usr/bin/env bash
# The one-run tables of docs/benchmarks.md, each from one `text2sql evaluate` run:
#   1. bundled test, all 72 questions: baseline, V1, V2 and compiled V2        (~70 min on 2 cores)
#   2. the same questions served from a throwaway PostgreSQL: baseline and V2  (~30 min), compared with 1
#   3. Spider dev, all 289 questions: the same four programs                   (~2 h), if the folder exists
# Resumable: run it again with the same OUT and every step does only what is missing (a compiled
# program is kept once written; `text2sql evaluate` answers only the questions it has no record of).
#
#   source .venv/bin/activate && benchmarks/one_run_tables.sh [OUT] [SPIDER_FOLDER]
set -euo pipefail
OUT=${1:-runs/tables}
SPIDER=${2:-../shared/benchmarks/spider-public}
mkdir -p "$OUT"

compiled() {  # compiled OUT_FILE [--data FOLDER]: V2 compiled as those tables use it, unless it exists
    local file=$1; shift
    [ -f "$file" ] || text2sql compile --program v2 --optimizer bootstrap --metric judge+execution \
        --train-limit 8 --dev-limit 0 --max-labeled-demos 2 "$@" --out "$file"
}

compiled "$OUT/v2-bundled.json"
text2sql evaluate --split test --program baseline --program v1 --program v2 \
    --program "$OUT/v2-bundled.json" --out "$OUT/bundled"

python tests/postgres_server.py > "$OUT/postgres.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 120); do grep -q "PostgreSQL is up" "$OUT/postgres.log" && break; sleep 1; done
host=$(grep -o '/tmp/t2s-pg-[A-Za-z0-9_]*' "$OUT/postgres.log" | head -1)
[ -n "$host" ] || { echo "the PostgreSQL server did not start: see $OUT/postgres.log" >&2; exit 1; }
python benchmarks/load_postgres.py --data data --split test --url "postgresql://postgres@/{db_id}?host=$host" \
    --reader-url "postgresql://reader@/{db_id}?host=$host" --out "$OUT/served" --skip-load
text2sql evaluate --data "$OUT/served/target" --split test --program baseline --program v2 --out "$OUT/pg"
python benchmarks/compare_runs.py "$OUT/bundled" "$OUT/pg" --program baseline --program v2 | tee "$OUT/pg/compare-sqlite.txt"
kill "$server"

if [ -d "$SPIDER" ]; then
    compiled "$OUT/v2-spider.json" --data "$SPIDER"
    text2sql evaluate --data "$SPIDER" --split dev --program baseline --program v1 --program v2 \
        --program "$OUT/v2-spider.json" --out "$OUT/spider"
fi
