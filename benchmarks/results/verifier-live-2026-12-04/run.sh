#!/bin/bash
# The verifier refitted on 1,843 training answers (shipped in 15df4fb), live in V2 on the held-out sets: V2 at e6d9e4e
# (before: the verifier fitted on 739 answers) against V2 at 57f548c (after: the refit, and warm() reading the edit's
# prefix, which evaluate never calls), side by side, one model thread each, default settings. Resumable.
#   git worktree add /tmp/wb e6d9e4e && pip install --no-deps --target /tmp/snap/before /tmp/wb
#   git worktree add /tmp/wa 57f548c && pip install --no-deps --target /tmp/snap/after /tmp/wa
#   bash benchmarks/results/verifier-live-2026-12-04/run.sh OUT [SET ...]   (default: spider-dev bird-off bird-on sparc)
# then, for each SET: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET
OUT=${1:?usage: run.sh OUT [SET ...]}
shift
SETS=${*:-spider-dev bird-off bird-on sparc}
HERE=$(dirname "$0")
for arm in before after; do
  # shellcheck disable=SC2086
  bash "$HERE/../right-on-real-2026-11-29/run.sh" "$OUT" $arm /tmp/snap/$arm $SETS &
done
wait
