#!/usr/bin/env python
"""How often each finding fires on a ``text2sql evaluate`` run's answers, and how many of those answers are right.

    python benchmarks/lint_firings.py RUN [RUN ...] [--program v2] [--any-reading]

Per finding kind: the answers whose chosen query carries it, and how many of them are right. With
``--any-reading``, the answers where any reading drawn (chosen or not, valid or not) carries it: a draft naming a
table or column its database lacks (``unknown table``, ``unknown column``) counts there even when the answer chose
another. Runs are ``evaluate --out`` folders (``records.jsonl``, or ``records.jsonl.gz`` as committed).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from verdict_table import records  # benchmarks/ is on sys.path when this file runs


def firings(rows: list[dict], *, any_reading: bool = False) -> dict[str, tuple[int, int]]:
    """Finding kind -> (answers whose chosen reading carries it, or with ``any_reading`` any of their readings; of
    those answers, the right ones)."""
    on, right = Counter(), Counter()
    for r in rows:
        readings = [g for g in r.get("readings") or [] if any_reading or g.get("chosen")]
        for kind in {f["kind"] for g in readings for f in g.get("findings") or [] if isinstance(f, dict)}:
            on[kind] += 1
            right[kind] += bool(r["correct"])
    return {kind: (on[kind], right[kind]) for kind in sorted(on, key=lambda k: -on[k])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--program", default="v2")
    parser.add_argument("--any-reading", action="store_true",
                        help="count a finding on any reading drawn, not only the chosen")
    args = parser.parse_args(argv)
    where = "any reading" if args.any_reading else "the chosen query"
    for run in args.runs:
        rows = records(run, args.program)
        print(f"{run}: {len(rows)} answers, {sum(r['correct'] for r in rows)} right")
        print(f"  {'finding on ' + where:32s} {'answers':>8s} {'right':>6s}")
        for kind, (n, good) in firings(rows, any_reading=args.any_reading).items():
            print(f"  {kind:32s} {n:8d} {good:6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
