#!/bin/bash
# The refit that NOTES.md's rule (written before it ran) judges: fitted on every answer collected through this folder
# (2026-11-29's first Spider questions, and this folder's shuffled Spider questions and CoSQL turns, which hold
# 2026-12-02's and 2026-11-29's), replayed out of fold against the shipped verifier on the same answers, and, reported
# only, on the held-out records. Asks nothing of the model. Run from the repository root; writes its outputs beside
# this script and the refit to $OUT (default /tmp/refit-1203.json).
#   bash benchmarks/results/verifier-data-2026-12-03/refit.sh
# A later refit sets D (its folder), SHIPPED_AT (the commit of the file it is judged against), R and HELD (the held-out
# runs reported), as ../verifier-data-2026-12-04/refit.sh does, and SHIPPED_ON (the files the shipped file was fitted
# on) to score the shipped file out of fold too, as ../verifier-data-2026-12-05/refit.sh does, and FIT_OPTIONS
# (more options of fit_verifier.py), as ../verifier-data-2026-12-05b/refit.sh does.
set -euo pipefail
D=${D:-benchmarks/results/verifier-data-2026-12-03}
E=benchmarks/results/verifier-data-2026-11-29
B=../shared/benchmarks
OUT=${OUT:-/tmp/refit-1203.json}
SHIPPED_AT=${SHIPPED_AT:-64aeac0}
SHIPPED=/tmp/verifier-shipped-$SHIPPED_AT.json
git show "$SHIPPED_AT":programs/agents/verifier.json > "$SHIPPED"
R=${R:-benchmarks/results/verify-and-follow-2026-11-28/after}  # V2 with an earlier verifier, 2026-11-28 (its NOTES)
HELD=${HELD:-"$R/sparc $R/spider-dev $R/bird"}
ROOTS="--data-root $B/spider-public --data-root $B/sparc-public --data-root $B/bird-public"
FILES="$E/spider-train.jsonl.gz $D/spider-train-shuffled.jsonl.gz $D/cosql-train.jsonl.gz"
ON="--cut-offs-on $D/spider-train-shuffled.jsonl.gz --cut-offs-on $D/cosql-train.jsonl.gz"
FITTED=""
for f in ${SHIPPED_ON:-}; do FITTED="$FITTED --shipped-fitted-on $f"; done
quiet() { grep -v -e "Indexing values" -e '^\s*$' || true; }
# shellcheck disable=SC2086
.venv/bin/python benchmarks/fit_verifier.py $FILES $ON --data-root $B/spider-train --out "$OUT" ${FIT_OPTIONS:-} 2>&1 \
    | quiet > $D/refit-fit.txt
# the rule's four figures: the refit out of fold against the shipped file, on the training answers alone
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_training.py $FILES --data-root $B/spider-train --refit "$OUT" --shipped $SHIPPED \
    $ON $FITTED 2>&1 | quiet > $D/refit-training.txt
# reported, choosing nothing: the held-out records of 2026-11-28 (bird-public was tuned on earlier)
for args in "$HELD" "$R/sparc --relaxed"; do
  # shellcheck disable=SC2086
  .venv/bin/python benchmarks/rescore_verifier.py $args --verifier $SHIPPED --verifier "$OUT" $ROOTS 2>&1 | quiet
done > $D/refit-rescored.txt
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_choice.py $HELD --verifier $SHIPPED \
    --verifier "$OUT" $ROOTS 2>&1 | quiet > $D/refit-replayed.txt
tail -n 16 $D/refit-fit.txt; cat $D/refit-training.txt $D/refit-rescored.txt $D/refit-replayed.txt
