#!/bin/bash
# V2 on the conversations a pointing-back rewrite can touch (affected.py), each arm from its own snapshot
# (../../evaluate_arm.sh). Resumable.
#   python benchmarks/results/pointing-back-2026-12-05/affected.py /tmp/pb
#   git worktree add /tmp/wb f12ddd2 && pip install --no-deps --target /tmp/snap/before /tmp/wb   (likewise after)
#   bash benchmarks/results/pointing-back-2026-12-05/run.sh /tmp/pb ARM /tmp/snap/ARM
#   python benchmarks/compare_runs.py /tmp/pb/out/before/SET /tmp/pb/out/after/SET
ARM=$(dirname "$0")/../../evaluate_arm.sh
bash "$ARM" "$1" "$2" "$3" cosql
bash "$ARM" "$1" "$2" "$3" sparc
