#!/bin/bash
# The refit on the collected answers and what it does on the held-out records, asking nothing of the model. Run from
# the repository root; writes its outputs beside this script and the verifier to $OUT (default /tmp/refit.json).
#   bash benchmarks/results/verifier-data-2026-11-29/refit.sh
set -euo pipefail
D=benchmarks/results/verifier-data-2026-11-29
B=../shared/benchmarks
OUT=${OUT:-/tmp/refit.json}
BEFORE=/tmp/verifier-before-64aeac0.json  # the file shipped until the refit replaced it at 64aeac0
git show 080f0d2:programs/agents/verifier.json > $BEFORE
R=benchmarks/results/verify-and-follow-2026-11-28/after  # V2 with the shipped verifier, 2026-11-28 (its NOTES)
ROOTS="--data-root $B/spider-public --data-root $B/sparc-public --data-root $B/bird-public"
CLEAN=tvshow,network_1,concert_singer,pets_1,cre_Doc_Template_Mgt  # SParC dev's databases the shipped fit never saw
quiet() { grep -v -e "Indexing values" -e '^\s*$' || true; }
.venv/bin/python benchmarks/fit_verifier.py $D/spider-train.jsonl.gz $D/spider-train-shuffled.jsonl.gz \
    $D/cosql-train.jsonl.gz --cut-offs-on $D/spider-train-shuffled.jsonl.gz --cut-offs-on $D/cosql-train.jsonl.gz \
    --data-root $B/spider-train --out "$OUT" 2>&1 | quiet > $D/refit-fit.txt
.venv/bin/python $D/shipped_on_new.py $D/spider-train.jsonl.gz $D/spider-train-shuffled.jsonl.gz \
    $D/cosql-train.jsonl.gz --data-root $B/spider-train 2>&1 | quiet > $D/refit-shipped-on-train.txt
for args in "$R/sparc $R/spider-dev $R/bird" "$R/sparc --databases $CLEAN" "$R/sparc --relaxed"; do
  # shellcheck disable=SC2086
  .venv/bin/python benchmarks/rescore_verifier.py $args --verifier $BEFORE --verifier "$OUT" \
      $ROOTS 2>&1 | quiet
done > $D/refit-rescored.txt
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_choice.py $R/sparc $R/spider-dev $R/bird --verifier $BEFORE \
    --verifier "$OUT" $ROOTS 2>&1 | quiet > $D/refit-replayed.txt
# shellcheck disable=SC2086
.venv/bin/python benchmarks/replay_choice.py $R/sparc --databases $CLEAN --verifier $BEFORE \
    --verifier "$OUT" $ROOTS 2>&1 | quiet >> $D/refit-replayed.txt
.venv/bin/python benchmarks/results/verifier-pair-2026-11-29/pair_model.py $D/spider-train.jsonl.gz \
    $D/spider-train-shuffled.jsonl.gz $D/cosql-train.jsonl.gz --data-root $B/spider-train 2>&1 | quiet \
    > benchmarks/results/verifier-pair-2026-11-29/pair-model.txt
.venv/bin/python benchmarks/results/verifier-pair-2026-11-29/pair_model.py $D/spider-train.jsonl.gz \
    $D/spider-train-shuffled.jsonl.gz $D/cosql-train.jsonl.gz --data-root $B/spider-train --design embedded 2>&1 \
    | quiet > benchmarks/results/verifier-pair-2026-11-29/pair-model-embedded.txt
tail -n 12 $D/refit-fit.txt; cat $D/refit-shipped-on-train.txt $D/refit-rescored.txt $D/refit-replayed.txt \
    benchmarks/results/verifier-pair-2026-11-29/pair-model.txt benchmarks/results/verifier-pair-2026-11-29/pair-model-embedded.txt
