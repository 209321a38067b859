#!/bin/bash
# Issue 37's bundled-test row at f9a3815: V2 on all 72 bundled test questions (documented already), one thread,
# the disk KV cache off, beside a fresh-clone CI run. (pip install --no-deps --target /tmp/t2s-f9a3815)
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
R=$OUT
env PYTHONPATH=/tmp/t2s-f9a3815 /work/main/.venv/bin/python -m text2sql_dspy.cli evaluate --split test --program v2 --out $R/bundled > $R/bundled.log 2>&1
echo ALLDONE > $R/bundled.done
