"""Start a throwaway MariaDB, load Spider dev's databases, write the served splits, stay up until killed.

OUT/sqlite and OUT/target as benchmarks/load_postgres.py writes them (target: one reader of every database);
OUT/own: the same questions, each database read by its own SELECT-only user (r0, r1, ...), as the README advises.

    python benchmarks/results/spider-dev-mariadb-2026-11-26/serve.py OUT   # from the repository root
"""
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
import mariadb_server  # noqa: E402

SPIDER = ROOT.parent / "shared" / "benchmarks" / "spider-public"
out = Path(sys.argv[1])
server = mariadb_server.start()
for db in sorted({r["db_id"] for r in json.loads((SPIDER / "dev.json").read_text())}):
    server.create_database(db)
root, reader = server.url("{db_id}"), server.reader_url("{db_id}")
print("URL", root, reader, flush=True)
with open(out.with_suffix(".load.log"), "w") as log:
    rc = subprocess.call([sys.executable, str(ROOT / "benchmarks" / "load_postgres.py"), "--data", str(SPIDER),
                          "--split", "dev", "--url", root, "--reader-url", reader, "--out", str(out)],
                         stdout=log, stderr=subprocess.STDOUT)
served = json.loads((out / "target" / "databases.json").read_text())
own = {}
for i, db in enumerate(sorted(served)):
    server.sql(None, f"CREATE USER IF NOT EXISTS 'r{i}'@'localhost'", f"GRANT SELECT ON `{db}`.* TO 'r{i}'@'localhost'")
    own[db] = served[db].replace(f"//{mariadb_server.READER}@", f"//r{i}@", 1)
(out / "own").mkdir(exist_ok=True)
(out / "own" / "databases.json").write_text(json.dumps(own, indent=1))
(out / "own" / "dev.json").write_text((out / "target" / "dev.json").read_text())
print("LOADED rc", rc, flush=True)
try:
    while True:
        time.sleep(3600)
finally:
    server.stop()
