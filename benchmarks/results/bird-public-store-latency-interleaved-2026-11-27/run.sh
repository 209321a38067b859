#!/bin/bash
# Issue 37's latency row, both programs interleaved in one process on one model (benchmarks/bench_store_latency.py),
# code 370636e (installed with pip install --no-deps --target, run from /tmp), bird-public first 30, evidence off.
# full: BIRD's docs (beside the file), the value lookup, the 69 pairs of questions 61-129 as the store
#       (text2sql learn --file ../bird-public-half-store-2026-11-26/bird-second-half.json --examples bird-store.sqlite);
# plain: the same SQLite file copied without database_description/, no lookup lines, no store.
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_KV_CACHE_BYTES=0
python benchmarks/bench_store_latency.py --data ../shared/benchmarks/bird-public --plain-data bird-plain \
    --examples bird-store.sqlite --limit 30 --out latency.jsonl > latency.txt
