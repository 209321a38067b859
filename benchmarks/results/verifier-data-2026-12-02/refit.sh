#!/bin/bash
# The refit on every answer collected so far (2026-11-29's first Spider questions, and this folder's shuffled Spider
# questions and CoSQL turns, which hold 2026-11-29's too) against the shipped verifier, and what each does on the
# held-out records, asking nothing of the model. Run from the repository root; writes its outputs beside this
# script, the refit to $OUT (default /tmp/refit-1202.json) and the re-cut to $RECUT (default /tmp/recut-1202.json).
#   bash benchmarks/results/verifier-data-2026-12-02/refit.sh
set -euo pipefail
D=benchmarks/results/verifier-data-2026-12-02
E=benchmarks/results/verifier-data-2026-11-29
B=../shared/benchmarks
OUT=${OUT:-/tmp/refit-1202.json}
SHIPPED=/tmp/verifier-shipped-8dc82d7.json
git show 8dc82d7:programs/agents/verifier.json > $SHIPPED
R=benchmarks/results/verify-and-follow-2026-11-28/after  # V2 with an earlier verifier, 2026-11-28 (its NOTES)
ROOTS="--data-root $B/spider-public --data-root $B/sparc-public --data-root $B/bird-public"
CLEAN=tvshow,network_1,concert_singer,pets_1,cre_Doc_Template_Mgt  # SParC dev's databases no fit saw
FILES="$E/spider-train.jsonl.gz $D/spider-train-shuffled.jsonl.gz $D/cosql-train.jsonl.gz"
quiet() { grep -v -e "Indexing values" -e '^\s*$' || true; }
# shellcheck disable=SC2086
.venv/bin/python benchmarks/fit_verifier.py $FILES --cut-offs-on $D/spider-train-shuffled.jsonl.gz \
    --cut-offs-on $D/cosql-train.jsonl.gz --data-root $B/spider-train --out "$OUT" 2>&1 | quiet > $D/refit-fit.txt
# shellcheck disable=SC2086
.venv/bin/python $E/shipped_on_new.py $FILES --data-root $B/spider-train --verifier $SHIPPED 2>&1 | quiet > $D/shipped-on-train.txt
for args in "$R/sparc $R/spider-dev $R/bird" "$R/sparc --databases $CLEAN" "$R/sparc --relaxed"; do
  # shellcheck disable=SC2086
  .venv/bin/python benchmarks/rescore_verifier.py $args --verifier $SHIPPED --verifier "$OUT" $ROOTS 2>&1 | quiet
done > $D/refit-rescored.txt
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_choice.py $R/sparc $R/spider-dev $R/bird --verifier $SHIPPED \
    --verifier "$OUT" $ROOTS 2>&1 | quiet > $D/refit-replayed.txt
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_choice.py $R/sparc --databases $CLEAN --verifier $SHIPPED \
    --verifier "$OUT" $ROOTS 2>&1 | quiet >> $D/refit-replayed.txt
ON="--cut-offs-on $D/spider-train-shuffled.jsonl.gz --cut-offs-on $D/cosql-train.jsonl.gz"
# the ship rules' figures, on the training answers alone (NOTES.md): the refit out of fold against the shipped file,
# and the shipped models with their cut-offs chosen again on the answers they were not fitted on
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_training.py $FILES --data-root $B/spider-train --refit "$OUT" --shipped $SHIPPED \
    $ON 2>&1 | quiet > $D/refit-training.txt
RECUT=${RECUT:-/tmp/recut-1202.json}
# shellcheck disable=SC2086
.venv/bin/python benchmarks/recut_verifier.py $FILES --data-root $B/spider-train --verifier $SHIPPED \
    --fitted-on $E/spider-train.jsonl.gz --fitted-on $E/spider-train-shuffled.jsonl.gz \
    --fitted-on $E/cosql-train.jsonl.gz --out "$RECUT" 2>&1 | quiet > $D/recut.txt
for args in "$R/sparc $R/spider-dev $R/bird" "$R/sparc --relaxed"; do
  # shellcheck disable=SC2086
  .venv/bin/python benchmarks/rescore_verifier.py $args --verifier $SHIPPED --verifier "$RECUT" $ROOTS 2>&1 | quiet
done > $D/recut-rescored.txt
tail -n 14 $D/refit-fit.txt; cat $D/shipped-on-train.txt $D/refit-rescored.txt $D/refit-replayed.txt
cat $D/refit-training.txt $D/recut.txt $D/recut-rescored.txt
# the second design for the text signal, hashed (question word, query token) pairs stacked on the full model
# shellcheck disable=SC2086
.venv/bin/python benchmarks/results/verifier-pair-2026-11-29/pair_model.py $FILES --data-root $B/spider-train 2>&1 \
    | quiet > $D/pair-model.txt
cat $D/pair-model.txt
