#!/bin/bash
# More training answers for the verifier, collected as ../verifier-data-2026-12-02/run.sh collects them, into this
# folder, each file first seeded with 2026-12-03's answers (which hold 2026-12-02's and 2026-11-29's), so that
# 2026-12-03's files stay the bytes its refit read. Run from the repository root; resumable.
#   bash benchmarks/results/verifier-data-2026-12-04/run.sh cosql|spider-shuffled PER_DATABASE
D=benchmarks/results/verifier-data-2026-12-04 E=benchmarks/results/verifier-data-2026-12-03 \
  exec bash benchmarks/results/verifier-data-2026-12-02/run.sh "$@"
