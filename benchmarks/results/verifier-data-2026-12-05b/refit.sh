#!/bin/bash
# The refit that ../verifier-data-2026-12-04/NOTES.md's rule for the next refit (written before it ran) judges, as
# ../verifier-data-2026-12-05/refit.sh runs it, on this folder's files (which hold every earlier folder's answers and
# those collected after the 2026-12-05 refit was judged), with LOSS the share of the questions that "one draft is
# enough" may lose against sampling every one (fit_verifier.py's --enough-loss). Asks nothing of the model. Run from
# the repository root; writes its outputs beside this script as refit-LOSS-*.txt and the refit to $OUT.
#   LOSS=0.0025 bash benchmarks/results/verifier-data-2026-12-05b/refit.sh    # the loss every earlier refit allowed
#   LOSS=0.005 bash benchmarks/results/verifier-data-2026-12-05b/refit.sh     # the refit shipped from this folder
set -e
LOSS=${LOSS:-0.005}
R=benchmarks/results/verifier-live-2026-12-04/after P=benchmarks/results/verifier-data-2026-12-03
A=benchmarks/results/verifier-data-2026-11-29/spider-train.jsonl.gz
D=benchmarks/results/verifier-data-2026-12-05b
D=$D OUT=${OUT:-/tmp/refit-1205b-$LOSS.json} SHIPPED_AT=15df4fb R=$R HELD="$R/sparc $R/spider-dev $R/bird-on" \
  SHIPPED_ON="$A $P/spider-train-shuffled.jsonl.gz $P/cosql-train.jsonl.gz" FIT_OPTIONS="--enough-loss $LOSS" \
  bash benchmarks/results/verifier-data-2026-12-03/refit.sh
for f in fit training rescored replayed; do mv "$D/refit-$f.txt" "$D/refit-$LOSS-$f.txt"; done
