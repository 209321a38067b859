#!/bin/bash
# Spider dev served from a throwaway MariaDB (V2, first 60 of the 277 gold queries that run alike), against SQLite.
# `python serve.py served &` starts the server (tests/mariadb_server.py), creates one database per db_id and runs
# benchmarks/load_postgres.py with a mysql+pymysql URL (-> served/sqlite, served/target, excluded.json).
# One SELECT-only user per database (r0, r1, ...: GRANT SELECT ON `db`.* ...), as the README tells users,
# written to served/own/databases.json with served/target/dev.json.
export TEXT2SQL_N_THREADS=1
text2sql evaluate --data served/sqlite --split dev --program v2 --limit 60 --out sqlite60
text2sql evaluate --data served/own --split dev --program v2 --limit 60 --out maria60
python benchmarks/compare_runs.py sqlite60 maria60 --program v2 > compare-sqlite-mariadb.txt
