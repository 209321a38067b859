#!/usr/bin/env python
"""Two runs of V2 on the same questions scored again by both rules, Spider's (rows as a multiset) and BIRD's (rows
as a set), each with the paired sign test: a run made at an older commit scored bird-public by Spider's rule, so its
records' ``correct`` does not compare with a newer run's. Executes each recorded query again against gold, read-only;
asks nothing of the model.

    python benchmarks/both_rules.py BEFORE_RUN AFTER_RUN --data DIR [--split dev] [--program v2]

A run is a ``text2sql evaluate --out`` folder (``records.jsonl``, or ``records.jsonl.gz`` as committed); ``--data``
is the Spider-format folder both answered (``../shared/benchmarks/bird-public``). Questions are matched by their
conversation, turn and text.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.optimize.report import paired_comparison
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.query.results import Scoring


def records(run: Path, program: str) -> list[dict]:
    """The run's records of ``program`` in question order, each keyed by (conversation, turn, question)."""
    rows = sorted((r for (p, _), r in load_records(run / "records.jsonl").items() if p == program),
                  key=lambda r: r["index"])
    if not rows:
        raise SystemExit(f"{run}: no records of program {program!r}")
    for r in rows:
        r["key"] = (r.get("interaction"), r.get("turn"), r["question"])
    return rows


def scored(runs: dict[str, list[dict]], examples: list, scoring: Scoring) -> str:
    """One line: each run's right answers by ``scoring``'s rule (set as each record's ``correct``), and the paired
    sign test of the second run against the first."""
    right = {}
    for name, rows in runs.items():
        for r in rows:
            example = examples[r["index"]]
            r["correct"] = compare_execution(r.get("sql") or "", example.gold_sql, example.db_path, scoring).match
        right[name] = f"{sum(r['correct'] for r in rows)}/{len(rows)}"
    (first, before), (second, after) = runs.items()
    return (f"{scoring.value}: {first} {right[first]}, {second} {right[second]}; "
            f"paired: {paired_comparison(before, after, key='key')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--data", required=True, help="the Spider-format folder both runs answered")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--program", default="v2")
    args = parser.parse_args(argv)
    examples = load_split(args.data, args.split)
    runs = {"before": records(args.before, args.program), "after": records(args.after, args.program)}
    for scoring in Scoring:
        print(scored(runs, examples, scoring))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
