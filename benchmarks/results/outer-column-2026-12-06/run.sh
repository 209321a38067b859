#!/bin/bash
# V2 before (dda74ce) and after (the outer-column lint) on the held-out questions affected.py finds (bird-public with
# evidence: 1; SParC dev: 9 conversations; Spider dev and bird-public without evidence: none), each arm from its own
# snapshot (../../evaluate_arm.sh), one model thread each, the two arms side by side. Resumable.
#   python benchmarks/results/outer-column-2026-12-06/affected.py OUT
#   git worktree add /tmp/wb dda74ce && pip install --no-deps --target /tmp/snap/before /tmp/wb   (after: its commit)
#   bash benchmarks/results/outer-column-2026-12-06/run.sh OUT before /tmp/snap/before    (and after)
#   python benchmarks/compare_runs.py OUT/out/before/SET OUT/out/after/SET
ARM=$(dirname "$0")/../../evaluate_arm.sh
bash "$ARM" "$1" "$2" "$3" bird-on
bash "$ARM" "$1" "$2" "$3" sparc --databases "$(realpath "$(dirname "$0")/../../../../shared/benchmarks/spider-public")"
