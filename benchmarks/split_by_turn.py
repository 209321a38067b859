#!/usr/bin/env python
"""V2's and the baseline's median latency on the same SParC turns, split by kind of turn (a database's first turn,
or its first follow-up, in the run, or a later one) and by whether V2 made one model call. Asks nothing of the model.

    python benchmarks/split_by_turn.py BASELINE_RUN V2_RUN

The runs are ``text2sql evaluate --out`` folders over the same turns (``records.jsonl``, or ``records.jsonl.gz`` as
committed), as ``benchmarks/latency_ratio.sh`` writes them (OUT/baseline, OUT/v2).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records


def answers(run: Path) -> list[dict]:
    """The run's records in question order."""
    return [record for _, record in sorted(load_records(run / "records.jsonl").items(), key=lambda kv: kv[0][1])]


def by_kind(baseline: list[dict], v2: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """Kind of turn -> (V2's latency, the baseline's on the same turn) for each of V2's turns of that kind."""
    theirs = {r["index"]: r for r in baseline}
    seen_first, seen_follow, groups = set(), set(), {}
    for r in v2:
        if r["turn"] == 0:
            kind = "first turn" + (", new database" if r["db_id"] not in seen_first else "")
            seen_first.add(r["db_id"])
        else:
            kind = "follow-up" + (", first in its database" if r["db_id"] not in seen_follow else "")
            seen_follow.add(r["db_id"])
        kind += ", one call" if r["metrics"]["lm_calls"] == 1 else ", more calls"
        groups.setdefault(kind, []).append((r["metrics"]["latency_s"], theirs[r["index"]]["metrics"]["latency_s"]))
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("v2", type=Path)
    args = parser.parse_args(argv)
    groups = by_kind(answers(args.baseline), answers(args.v2))
    print(f"{'turns':45s} {'n':>3s} {'V2 median s':>12s} {'baseline median s':>18s}")
    for kind in sorted(groups):
        pairs = groups[kind]
        print(f"{kind:45s} {len(pairs):3d} {statistics.median(v for v, _ in pairs):12.1f} "
              f"{statistics.median(b for _, b in pairs):18.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
