#!/bin/bash
# Training answers for the verifier: V2 (less the verifier, sampling always, judging every result group) on the
# first questions of every spider-train database and the first conversations of every cosql-train database, one
# model thread a run, resumable (rerun to go on). Run from the repository root.
#   bash benchmarks/results/verifier-data-2026-11-29/run.sh spider|spider-shuffled|cosql PER_DATABASE
# spider-shuffled: each database's first questions in a fixed shuffled order (not the split's easy first ones), into
# a file of their own: a sample as hard as the split, on which the fit chooses its cut-offs (--cut-offs-on).
D=benchmarks/results/verifier-data-2026-11-29
B=../shared/benchmarks
export TEXT2SQL_N_THREADS=1
case $1 in
  spider) .venv/bin/python benchmarks/collect_candidates.py --data $B/spider-train --split train \
            --per-database "${2:-2}" --out $D/spider-train.jsonl.gz ;;
  spider-shuffled) .venv/bin/python benchmarks/collect_candidates.py --data $B/spider-train --split train \
            --per-database "${2:-2}" --shuffled --out $D/spider-train-shuffled.jsonl.gz ;;
  cosql) .venv/bin/python benchmarks/collect_candidates.py --data $B/cosql-train --split train \
            --databases $B/spider-train --per-database "${2:-1}" --out $D/cosql-train.jsonl.gz ;;
esac
