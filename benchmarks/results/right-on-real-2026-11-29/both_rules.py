#!/usr/bin/env python
"""Each run's answers scored by both rules (Spider's multiset, BIRD's sets), and the paired sign test under each.

    python benchmarks/results/right-on-real-2026-11-29/both_rules.py BEFORE_RUN AFTER_RUN --data DIR [--split dev]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from verdict_table import records  # noqa: E402

from text2sql_dspy.optimize.metrics import compare_execution  # noqa: E402
from text2sql_dspy.optimize.report import paired_comparison  # noqa: E402
from text2sql_dspy.programs.dataset import load_split  # noqa: E402
from text2sql_dspy.programs.query.results import Scoring  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()
    examples = load_split(args.data, args.split)
    runs = {"before": records(args.before, "v2"), "after": records(args.after, "v2")}
    for scoring in Scoring:
        for rows in runs.values():
            for r in rows:
                ex = examples[r["index"]]
                r["correct"] = compare_execution(r.get("sql") or "", ex.gold_sql, ex.db_path, scoring).match
        right = {name: sum(r["correct"] for r in rows) for name, rows in runs.items()}
        n = len(runs["after"])
        print(f"{scoring.value}: before {right['before']}/{len(runs['before'])}, after {right['after']}/{n}; "
              f"paired: {paired_comparison(runs['before'], runs['after'], key='key')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
