#!/bin/bash
# More training answers for the verifier, collected as ../verifier-data-2026-12-02/run.sh collects them, into this
# folder, each file first seeded with 2026-12-02's answers (which hold 2026-11-29's). Run from the repository root.
#   bash benchmarks/results/verifier-data-2026-12-03/run.sh cosql|spider-shuffled PER_DATABASE
D=benchmarks/results/verifier-data-2026-12-03 E=benchmarks/results/verifier-data-2026-12-02 \
  exec bash benchmarks/results/verifier-data-2026-12-02/run.sh "$@"
