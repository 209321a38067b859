#!/usr/bin/env python
"""How often each finding fires on a ``text2sql evaluate`` run's answers, and how many of those answers are right.

    python benchmarks/lint_firings.py RUN [RUN ...] [--program v2]

Per finding kind: the answers whose chosen query carries it, and how many of them are right. Runs are ``evaluate
--out`` folders (``records.jsonl``, or ``records.jsonl.gz`` as committed).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from verdict_table import records  # benchmarks/ is on sys.path when this file runs


def firings(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """Finding kind -> (chosen readings carrying it, of those right)."""
    on, right = Counter(), Counter()
    for r in rows:
        chosen = next((g for g in r.get("readings") or [] if g.get("chosen")), None)
        if chosen is None:
            continue
        for kind in {f["kind"] for f in chosen.get("findings") or [] if isinstance(f, dict)}:
            on[kind] += 1
            right[kind] += bool(r["correct"])
    return {kind: (on[kind], right[kind]) for kind in sorted(on, key=lambda k: -on[k])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--program", default="v2")
    args = parser.parse_args(argv)
    for run in args.runs:
        rows = records(run, args.program)
        print(f"{run}: {len(rows)} answers, {sum(r['correct'] for r in rows)} right")
        print(f"  {'finding on the chosen query':32s} {'answers':>8s} {'right':>6s}")
        for kind, (n, good) in firings(rows).items():
            print(f"  {kind:32s} {n:8d} {good:6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
