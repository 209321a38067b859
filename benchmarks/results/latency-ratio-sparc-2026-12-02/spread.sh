#!/bin/bash
# run.sh on turns spread over every SParC dev database: the first PER (default 2) conversations of each, written to
# OUT/data/dev.json (SParC's own rows, in their order). Run from the repository root; resumable.
#   bash benchmarks/results/latency-ratio-sparc-2026-12-02/spread.sh OUT [PER]
# then: python benchmarks/verdict_table.py OUT/baseline OUT/v2 --program baseline --after-program v2
OUT=${1:?usage: spread.sh OUT [PER]}
PER=${2:-2}
mkdir -p "$OUT/data"
.venv/bin/python - ../shared/benchmarks/sparc-public/dev.json "$OUT/data/dev.json" "$PER" <<'PY'
import collections, json, sys
rows, kept, seen = json.load(open(sys.argv[1])), [], collections.Counter()
for row in rows:
    seen[row["database_id"]] += 1
    if seen[row["database_id"]] <= int(sys.argv[3]):
        kept.append(row)
json.dump(kept, open(sys.argv[2], "w"), indent=1)
print(f"{len(kept)} conversations, {sum(len(r['interaction']) for r in kept)} turns, {len(seen)} databases")
PY
bash "$(dirname "$0")/run.sh" "$OUT" all "$OUT/data"
