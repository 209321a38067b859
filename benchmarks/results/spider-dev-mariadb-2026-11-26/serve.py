"""Start a throwaway MariaDB, load Spider dev's databases, write the two served splits, stay up until killed."""
import json, subprocess, sys, time
sys.path.insert(0, "/work/main/tests"); sys.path.insert(0, "/work/main")
import mariadb_server
S = "/work/shared/benchmarks/spider-public"
server = mariadb_server.start()
dbs = sorted({r["db_id"] for r in json.load(open(f"{S}/dev.json"))})
for db in dbs:
    server.create_database(db)
root = server.url("{db_id}"); reader = server.reader_url("{db_id}")
print("URL", root, reader, flush=True)
rc = subprocess.call([sys.executable, "/work/main/benchmarks/load_postgres.py", "--data", S, "--split", "dev",
                      "--url", root, "--reader-url", reader, "--out", "/work/runs/maria/served"],
                     stdout=open("/work/runs/maria/load.log", "w"), stderr=subprocess.STDOUT)
print("LOADED rc", rc, flush=True)
try:
    while True: time.sleep(3600)
finally:
    server.stop()
