#!/bin/bash
# text2sql calibrate end to end with the embedded model: the bundled train split's pairs as the store, baseline, 24 pairs.
# Resumable: the store and the kept answers stay between runs.
cd /tmp
export TEXT2SQL_N_THREADS=1 TEXT2SQL_CACHE=/work/runs/s5/cal-cache
mkdir -p /work/runs/s5/cal-cache
for f in qwen2.5-coder-1.5b-instruct-q4_k_m.gguf qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.sha256 kv; do
  [ -e /work/runs/s5/cal-cache/$f ] || ln -s /root/.cache/text2sql-dspy/$f /work/runs/s5/cal-cache/$f; done
T=/work/main/.venv/bin/text2sql
( set -x
  $T learn --split train --examples /work/runs/s5/cal-store.sqlite
  time $T calibrate --program baseline --examples /work/runs/s5/cal-store.sqlite --limit 24
  $T ask "How many users are blocked right now?" --program baseline --examples /work/runs/s5/cal-store.sqlite
  ls -la /work/runs/s5/cal-cache/calibration/
) >> /work/runs/s5/cal.log 2>&1
echo "exit $?" >> /work/runs/s5/cal.log
