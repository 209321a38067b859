#!/usr/bin/env python
"""Score one run's answers again on another engine, to tell the engine's part in a gap from the model's.

    python benchmarks/rescore_on_engine.py runs/tables/bundled --data runs/tables/served/target --program v2

The queries an ``evaluate`` run wrote on SQLite are translated as the gold queries are
(:func:`~programs.db.dialect.transpile_gold`, sqlglot, then the engine's :meth:`DataSource.runnable`) and
scored against the gold on the engine that ``--data`` names (its ``databases.json``), question by question.
Only the questions of ``--data``'s split are scored. Printed per program: right on SQLite, right when the
same queries run on the other engine, and the questions whose verdict changed. If the same queries keep
their verdicts, an accuracy gap between an evaluate run on each engine comes from what the model wrote for
each dialect, not from the engine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.dataset import database_target, load_split
from text2sql_dspy.programs.db.dialect import TranspileError, transpile_gold
from text2sql_dspy.programs.source import open_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="an evaluate --out folder answered on SQLite")
    parser.add_argument("--data", type=Path, required=True, help="a data folder whose databases.json names the engine")
    parser.add_argument("--split", default="test")
    parser.add_argument("--program", action="append", required=True)
    args = parser.parse_args()

    questions = {ex.question for ex in load_split(args.data, args.split)}
    records = load_records(args.run / "records.jsonl").values()
    for program in args.program:
        mine = [r for r in records if r["program"] == program and r["question"] in questions]
        changed = []
        right_here = 0
        dialect = "?"
        for record in mine:
            target = database_target(args.data, record["db_id"])
            source = open_source(target)
            dialect = source.dialect
            try:
                query, error = source.runnable(transpile_gold(record["query"], dialect, source.column_names)), None
            except TranspileError as exc:
                query, error = "", str(exc)
            verdict = compare_execution(query, record["gold"], target)
            right_here += verdict.match
            if verdict.match != bool(record["correct"]):
                changed.append({"question": record["question"], "sqlite": record["correct"], "here": verdict.match,
                                "query": query, "error": error or verdict.pred_error})
        print(f"{program}: {len(mine)} questions; right on SQLite {sum(bool(r['correct']) for r in mine)}, "
              f"the same queries on {dialect} {right_here}; verdicts changed {len(changed)}")
        for row in changed:
            print("  " + json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
