#!/bin/bash
# OUT: where ../spider-dev-mariadb-2026-11-26/serve.py wrote served/ (and keeps MariaDB up); PKG_X: code X installed
# with pip install --no-deps --target PKG_X.
# concert_singer's 41 (Spider dev served from MariaDB by serve.py, and the same questions on SQLite), V2, 370636e.
cd /tmp
export TEXT2SQL_N_THREADS=1
R=$OUT
run() { env PYTHONPATH=$PKG_370636e python -m text2sql_dspy.cli evaluate --split dev --program v2 --limit 41 "$@"; }
run --data $R/served/sqlite --out $R/sqlite41-370636e > $R/sqlite41.log 2>&1 &
run --data $R/served/own --out $R/maria41-370636e > $R/maria41.log 2>&1 &
wait
echo ALLDONE > $R/done
