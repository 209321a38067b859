#!/bin/bash
# V2 before (e2346a2) and after (3caba01) on the questions affected.py finds, each arm from its own snapshot
# (../../evaluate_arm.sh), one model thread each, the two arms side by side. Resumable.
#   python benchmarks/results/symptom-redraft-2026-12-06/affected.py OUT
#   git worktree add /tmp/wb e2346a2 && pip install --no-deps --target /tmp/snap/before /tmp/wb   (after: 3caba01)
#   bash benchmarks/results/symptom-redraft-2026-12-06/run.sh OUT before /tmp/snap/before    (and after)
#   python benchmarks/compare_runs.py OUT/out/before/SET OUT/out/after/SET
ARM=$(dirname "$0")/../../evaluate_arm.sh
bash "$ARM" "$1" "$2" "$3" bird-off --evidence off
bash "$ARM" "$1" "$2" "$3" bird-on
bash "$ARM" "$1" "$2" "$3" spider-dev
bash "$ARM" "$1" "$2" "$3" sparc --databases "$(realpath "$(dirname "$0")/../../../../shared/benchmarks/spider-public")"
