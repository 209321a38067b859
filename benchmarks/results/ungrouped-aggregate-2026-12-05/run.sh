#!/bin/bash
# V2 on the held-out questions the aggregate repairs can touch (affected.py), each arm from its own snapshot
# (../../evaluate_arm.sh), one model thread. Resumable.
#   python benchmarks/results/ungrouped-aggregate-2026-12-05/affected.py /tmp/sub
#   git worktree add /tmp/wb 0ffcbaa && pip install --no-deps --target /tmp/snap/before /tmp/wb   (likewise each arm)
#   bash benchmarks/results/ungrouped-aggregate-2026-12-05/run.sh /tmp/sub ARM /tmp/snap/ARM
#   python benchmarks/compare_runs.py /tmp/sub/out/before/SET /tmp/sub/out/ARM/SET
ARM=$(dirname "$0")/../../evaluate_arm.sh
bash "$ARM" "$1" "$2" "$3" spider-dev
bash "$ARM" "$1" "$2" "$3" bird-on
bash "$ARM" "$1" "$2" "$3" sparc --databases "$(cd "$(dirname "$0")/../../.." && pwd)/../shared/benchmarks/spider-public"
