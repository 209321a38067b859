#!/bin/bash
# The refit that ../verifier-data-2026-12-04/NOTES.md's rule for the next refit (written before it ran) judges: run by
# ../verifier-data-2026-12-03/refit.sh on this folder's files (which hold every earlier folder's answers), against the
# file shipped in 15df4fb scored out of fold on the answers it was fitted on (2026-11-29's first Spider questions and
# 2026-12-03's files, their digest checked), with the held-out records of ../verifier-live-2026-12-04/after/ reported
# only. Asks nothing of the model. Run from the repository root; writes its outputs beside this script and the refit
# to $OUT.
#   bash benchmarks/results/verifier-data-2026-12-05/refit.sh
R=benchmarks/results/verifier-live-2026-12-04/after P=benchmarks/results/verifier-data-2026-12-03
A=benchmarks/results/verifier-data-2026-11-29/spider-train.jsonl.gz
D=benchmarks/results/verifier-data-2026-12-05 OUT=${OUT:-/tmp/refit-1205.json} SHIPPED_AT=15df4fb R=$R \
  HELD="$R/sparc $R/spider-dev $R/bird-on" \
  SHIPPED_ON="$A $P/spider-train-shuffled.jsonl.gz $P/cosql-train.jsonl.gz" \
  exec bash benchmarks/results/verifier-data-2026-12-03/refit.sh
