#!/bin/bash
# More training answers for the verifier, as ../verifier-data-2026-11-29/run.sh collects them (V2 less the verifier,
# sampling always, judging every result group; one model thread a run; resumable: rerun to go on). Run from the
# repository root.
#   bash benchmarks/results/verifier-data-2026-12-02/run.sh cosql|spider-shuffled PER_DATABASE
# The first run seeds each file here with the answers collected on 2026-11-29 (for cosql, both of its files), so
# the collector resumes past them and the earlier files stay the bytes the shipped verifier was fitted on.
# D (the folder written) and E (the folder seeded from) may be set, as ../verifier-data-2026-12-03/run.sh sets them.
set -e
D=${D:-benchmarks/results/verifier-data-2026-12-02}
E=${E:-benchmarks/results/verifier-data-2026-11-29}
B=../shared/benchmarks
export TEXT2SQL_N_THREADS=1
seed() {  # OUT FROM...: OUT, where missing, as the union of the FROM files' records
  [ -f "$1" ] && return 0
  .venv/bin/python - "$@" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
from collect_candidates import read_records, write_records
records = {}
for name in sys.argv[2:]:
    records.update(read_records(Path(name))[0])
write_records(Path(sys.argv[1]), records)
print(f"{sys.argv[1]}: seeded with {len(records)} records", file=sys.stderr)
PY
}
case $1 in
  cosql) seed $D/cosql-train.jsonl.gz $E/cosql-train*.jsonl.gz
         .venv/bin/python benchmarks/collect_candidates.py --data $B/cosql-train --split train \
           --databases $B/spider-train --per-database "${2:-1}" --out $D/cosql-train.jsonl.gz ;;
  spider-shuffled) seed $D/spider-train-shuffled.jsonl.gz $E/spider-train-shuffled.jsonl.gz
         .venv/bin/python benchmarks/collect_candidates.py --data $B/spider-train --split train \
           --per-database "${2:-2}" --shuffled --out $D/spider-train-shuffled.jsonl.gz ;;
  *) echo "usage: $0 cosql|spider-shuffled PER_DATABASE" >&2; exit 2 ;;
esac
