#!/bin/bash
# V2 before (b44e776, the program of ab02a46) and after (0c78eb0) on the questions affected.py finds, each arm from its own snapshot
# (../../evaluate_arm.sh), one model thread each. Resumable.
#   python benchmarks/results/unchecked-redraft-2026-12-05/affected.py OUT MERGED_DATA
#   git worktree add /tmp/wq b44e776 && pip install --no-deps --target /tmp/snap/q /tmp/wq      (after: 0c78eb0, /tmp/snap/r)
#   bash benchmarks/results/unchecked-redraft-2026-12-05/run.sh OUT before /tmp/snap/q    (and after /tmp/snap/r)
#   python benchmarks/compare_runs.py OUT/out/before/SET OUT/out/after/SET
ARM=$(dirname "$0")/../../evaluate_arm.sh
bash "$ARM" "$1" "$2" "$3" merged
bash "$ARM" "$1" "$2" "$3" sparc --databases "$(realpath "$(dirname "$0")/../../../../shared/benchmarks/spider-public")"
