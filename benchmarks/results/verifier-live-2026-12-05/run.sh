#!/bin/bash
# The verifier refitted on 4,871 training answers (shipped in 5d5ab95), live in V2 on the held-out single-question
# sets: V2 at f12ddd2 (before: the verifier of 15df4fb) against V2 at 5075dc6 (after: the refit, and a pointing-back
# rewrite sampled as an edit, which no single question has), side by side, one model thread each, default settings.
# Resumable.
#   git worktree add /tmp/wb f12ddd2 && pip install --no-deps --target /tmp/snap/before /tmp/wb
#   git worktree add /tmp/wn 5075dc6 && pip install --no-deps --target /tmp/snap/now /tmp/wn
#   bash benchmarks/results/verifier-live-2026-12-05/run.sh OUT
# then, for each SET: python benchmarks/verdict_table.py OUT/before/SET OUT/after/SET
OUT=${1:?usage: run.sh OUT}
HERE=$(dirname "$0")
bash "$HERE/../right-on-real-2026-11-29/run.sh" "$OUT" before /tmp/snap/before spider-dev bird-on &
bash "$HERE/../right-on-real-2026-11-29/run.sh" "$OUT" after /tmp/snap/now spider-dev bird-on &
wait
