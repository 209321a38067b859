#!/bin/bash
# The refit that ../verifier-data-2026-12-03/NOTES.md's rule (written before its first refit ran) judges again, run by
# ../verifier-data-2026-12-03/refit.sh on this folder's files (which hold every earlier folder's answers), against the
# file shipped in 15df4fb, with the held-out records of ../verifier-live-2026-12-04/after/ reported only. Asks nothing
# of the model. Run from the repository root; writes its outputs beside this script and the refit to $OUT.
#   bash benchmarks/results/verifier-data-2026-12-04/refit.sh
R=benchmarks/results/verifier-live-2026-12-04/after
D=benchmarks/results/verifier-data-2026-12-04 OUT=${OUT:-/tmp/refit-1204.json} SHIPPED_AT=15df4fb R=$R \
  HELD="$R/sparc $R/spider-dev $R/bird-on" exec bash benchmarks/results/verifier-data-2026-12-03/refit.sh
