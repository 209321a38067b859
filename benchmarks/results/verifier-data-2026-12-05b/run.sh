#!/bin/bash
# More training answers for the verifier, collected as ../verifier-data-2026-12-02/run.sh collects them, into this
# folder, each file first seeded with the answers of ../verifier-data-2026-12-05/ (which hold all earlier ones), so
# that its files stay the bytes its refit read. Run from the repository root; resumable.
#   bash benchmarks/results/verifier-data-2026-12-05b/run.sh cosql|spider-shuffled PER_DATABASE
D=benchmarks/results/verifier-data-2026-12-05b E=benchmarks/results/verifier-data-2026-12-05 \
  exec bash benchmarks/results/verifier-data-2026-12-02/run.sh "$@"
