#!/bin/bash
# OUT: where ../spider-dev-mariadb-2026-11-26/serve.py wrote served/ (and keeps MariaDB up); PKG_X: code X installed
# with pip install --no-deps --target PKG_X.
# Spider dev served from MariaDB and the same questions on SQLite, all 277, V2 at 370636e (resumed from the 41-question
# runs), and concert_singer's 41 on MariaDB at 5a12f76 (tables by name, before referenced_first), same machine, same day.
cd /tmp
export TEXT2SQL_N_THREADS=1
R=$OUT
run() { env PYTHONPATH=$1 python -m text2sql_dspy.cli evaluate --split dev --program v2 "${@:2}"; }
run $PKG_5a12f76 --data $R/served/own --limit 41 --out $R/maria41-5a12f76 > $R/maria41-5a12f76.log 2>&1 &
run $PKG_370636e --data $R/served/own --out $R/maria277-370636e > $R/maria277.log 2>&1 &
run $PKG_370636e --data $R/served/sqlite --out $R/sqlite277-370636e > $R/sqlite277.log 2>&1 &
wait
echo ALLDONE > $R/done2
