#!/bin/bash
# Spider dev served from a throwaway PostgreSQL; baseline and V2 answer there; compared with the SQLite run.
set -e
cd "$(dirname "$0")/../../.." && source .venv/bin/activate
O=runs/spg; rm -rf $O && mkdir -p $O
python tests/postgres_server.py > $O/postgres.log 2>&1 &
for _ in $(seq 120); do grep -q "PostgreSQL is up" $O/postgres.log && break; sleep 1; done
host=$(grep -o '/tmp/t2s-pg-[A-Za-z0-9_]*' $O/postgres.log | head -1)
PSQL=$(ls /usr/lib/postgresql/*/bin/psql | head -1)
dbs=$(python -c "import json;print(' '.join(sorted({x['db_id'] for x in json.load(open('../shared/benchmarks/spider-public/dev.json'))})))")
for db in $dbs; do $PSQL -q -h $host -U postgres -d postgres -c "CREATE DATABASE \"$db\""; done
python benchmarks/load_postgres.py --data ../shared/benchmarks/spider-public --split dev --url "postgresql://postgres@/{db_id}?host=$host" --out $O/loaded > $O/load.log 2>&1
for db in $dbs; do $PSQL -q -h $host -U postgres -d "$db" -c "GRANT USAGE ON SCHEMA public TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader"; done
python benchmarks/load_postgres.py --data ../shared/benchmarks/spider-public --split dev --url "postgresql://postgres@/{db_id}?host=$host" \
    --reader-url "postgresql://reader@/{db_id}?host=$host" --out $O/served --skip-load > $O/served.log 2>&1
date
/usr/bin/time -f "%e s wall" text2sql evaluate --data $O/served/target --split dev --program baseline --program v2 --out $O/pg > $O/evaluate.log 2>&1
date
python benchmarks/compare_runs.py benchmarks/results/spider-dev-four-programs-2026-11-24 $O/pg --program baseline --program v2 > $O/compare-sqlite.txt 2>&1
pkill -f tests/postgres_server.py || true
