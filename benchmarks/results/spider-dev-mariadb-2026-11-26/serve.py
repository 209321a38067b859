"""Start a throwaway MariaDB, load Spider dev's databases, write the two served splits, stay up until killed.

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
print("LOADED rc", rc, flush=True)
try:
    while True:
        time.sleep(3600)
finally:
    server.stop()
