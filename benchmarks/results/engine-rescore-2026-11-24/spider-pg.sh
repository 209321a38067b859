#!/bin/bash
# Spider dev served from a throwaway PostgreSQL, then the SQLite run's queries rescored there.
set -e
cd "$(dirname "$0")/../../.." && source .venv/bin/activate
rm -rf runs/spider-pg && mkdir -p runs/spider-pg
python tests/postgres_server.py > runs/spider-pg/postgres.log 2>&1 &
for _ in $(seq 120); do grep -q "PostgreSQL is up" runs/spider-pg/postgres.log && break; sleep 1; done
host=$(grep -o '/tmp/t2s-pg-[A-Za-z0-9_]*' runs/spider-pg/postgres.log | head -1)
PSQL=$(ls /usr/lib/postgresql/*/bin/psql | head -1)
dbs=$(python -c "import json;print(' '.join(sorted({x['db_id'] for x in json.load(open('../shared/benchmarks/spider-public/dev.json'))})))")
for db in $dbs; do $PSQL -q -h $host -U postgres -d postgres -c "CREATE DATABASE \"$db\""; done
python benchmarks/load_postgres.py --data ../shared/benchmarks/spider-public --split dev --url "postgresql://postgres@/{db_id}?host=$host" --out runs/spider-pg/loaded > runs/spider-pg/load.log 2>&1
for db in $dbs; do $PSQL -q -h $host -U postgres -d "$db" -c "GRANT USAGE ON SCHEMA public TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader"; done
python benchmarks/load_postgres.py --data ../shared/benchmarks/spider-public --split dev --url "postgresql://postgres@/{db_id}?host=$host" \
    --reader-url "postgresql://reader@/{db_id}?host=$host" --out runs/spider-pg/served --skip-load > runs/spider-pg/served.log 2>&1
python benchmarks/rescore_on_engine.py benchmarks/results/spider-dev-four-programs-2026-11-24 --data runs/spider-pg/served/target --split dev \
    --program baseline --program v1 --program v2 2>/dev/null > runs/spider-pg/rescore.txt
pkill -f tests/postgres_server.py || true
