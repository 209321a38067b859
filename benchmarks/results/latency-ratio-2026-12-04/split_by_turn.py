#!/usr/bin/env python
"""V2's and the baseline's median latency on the same SParC turns, split by kind of turn (a database's first turn or
first follow-up in the run, or a later one) and by whether V2 made one model call.

    python benchmarks/results/latency-ratio-2026-12-04/split_by_turn.py BASELINE_RUN V2_RUN
"""
import gzip
import json
import statistics
import sys
from pathlib import Path


def records(run: str) -> list[dict]:
    path = next(Path(run).glob("records.jsonl*"))
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as fh:
        return [json.loads(line) for line in fh if line.strip()]


baseline = {r["index"]: r for r in records(sys.argv[1])}
seen_first, seen_follow, groups = set(), set(), {}
for r in records(sys.argv[2]):
    if r["turn"] == 0:
        kind = "first turn" + (", new database" if r["db_id"] not in seen_first else "")
        seen_first.add(r["db_id"])
    else:
        kind = "follow-up" + (", first in its database" if r["db_id"] not in seen_follow else "")
        seen_follow.add(r["db_id"])
    kind += ", one call" if r["metrics"]["lm_calls"] == 1 else ", more calls"
    groups.setdefault(kind, []).append((r["metrics"]["latency_s"], baseline[r["index"]]["metrics"]["latency_s"]))
print(f"{'turns':45s} {'n':>3s} {'V2 median s':>12s} {'baseline median s':>18s}")
for kind in sorted(groups):
    pairs = groups[kind]
    print(f"{kind:45s} {len(pairs):3d} {statistics.median(v for v, _ in pairs):12.1f} "
          f"{statistics.median(b for _, b in pairs):18.1f}")
