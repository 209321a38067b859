#!/bin/bash
# More training answers for the verifier, collected as ../verifier-data-2026-12-02/run.sh collects them, into this
# folder, each file first seeded with 2026-12-04's answers (which hold all earlier ones), so that 2026-12-04's files
# stay the bytes its refit read. Run from the repository root; resumable.
#   bash benchmarks/results/verifier-data-2026-12-05/run.sh cosql|spider-shuffled PER_DATABASE
D=benchmarks/results/verifier-data-2026-12-05 E=benchmarks/results/verifier-data-2026-12-04 \
  exec bash benchmarks/results/verifier-data-2026-12-02/run.sh "$@"
