#!/usr/bin/env python
"""What an ``evaluate`` run's readings hold beside its answers: how often any reading it considered is right, and
which generator wrote the answers it chose (issue 80's per-set figures).

    python benchmarks/readings_table.py RUN [RUN ...] --data-root DIR [--data-root DIR ...] [--program v2]

Per run: the answers right; the answers with any reading right (each valid reading it ran executed against the gold
query by the record's own rule: :func:`~text2sql_dspy.optimize.metrics.compare_execution`); the answers settled by
one model call; the median latency; and, for each generator (``Reading.generator`` of the chosen reading; records
written before generators were named count as ``draft``), the answers it wrote and how many are right. Two runs or
more: each one's median latency against the first's. Runs are ``evaluate --out`` folders.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter
from functools import cache
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.query.results import Scoring


def database(db_id: str, roots: tuple[Path, ...]) -> Path:
    for root in roots:
        for path in (root / "database" / db_id / f"{db_id}.sqlite", root / db_id / f"{db_id}.sqlite"):
            if path.is_file():
                return path
    raise FileNotFoundError(f"no database {db_id} under {', '.join(map(str, roots))}")


def records(run: Path, program: str) -> list[dict]:
    """The run's records of ``program`` (``records.jsonl``, or ``records.jsonl.gz`` as committed), in order."""
    return sorted((r for r in load_records(run / "records.jsonl").values() if r["program"] == program),
                  key=lambda r: r["index"])


@cache
def _right(sql: str, gold: str, db: Path, scoring: str) -> bool:
    return bool(compare_execution(sql, gold, str(db), Scoring(scoring)).match)


def any_right(record: dict, roots: tuple[Path, ...]) -> bool:
    """Whether a valid reading of ``record`` that ran returns the gold query's rows (the chosen one by its record)."""
    if record.get("correct"):
        return True
    db = database(record["db_id"], roots)
    scoring = record.get("scored_as") or "spider"
    return any(_right(r["sql"], record["gold"], db, scoring) for r in record.get("readings") or []
               if r.get("valid") and r.get("preview") and not (r.get("preview") or {}).get("error"))


def chosen_generator(record: dict) -> str:
    """The generator of the reading the answer chose ("none": no query; "draft" for records before generators)."""
    chosen = next((r for r in record.get("readings") or [] if r.get("chosen")), None)
    if chosen is None or not record.get("sql"):
        return "none"
    return chosen.get("generator") or "draft"


def figures(rows: list[dict], roots: tuple[Path, ...]) -> dict:
    by = Counter(chosen_generator(r) for r in rows)
    right_by = Counter(chosen_generator(r) for r in rows if r.get("correct"))
    return {"answers": len(rows), "right": sum(bool(r.get("correct")) for r in rows),
            "any reading right": sum(any_right(r, roots) for r in rows),
            "one model call": sum((r.get("metrics") or {}).get("lm_calls", 0) == 1 for r in rows),
            "median latency s": statistics.median((r.get("metrics") or {}).get("latency_s", 0.0) for r in rows)
            if rows else 0.0,
            "chosen by generator": {g: (by[g], right_by[g]) for g in sorted(by, key=lambda g: -by[g])}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[], required=True)
    parser.add_argument("--program", default="v2")
    args = parser.parse_args(argv)
    roots = tuple(args.data_root)
    first = None
    for run in args.runs:
        found = figures(records(run, args.program), roots)
        n = max(1, found["answers"])
        print(f"{run}: {found['answers']} answers, {found['right']} right ({found['right'] / n:.1%}); any reading "
              f"right {found['any reading right']} ({found['any reading right'] / n:.1%}); one model call "
              f"{found['one model call']}; median latency {found['median latency s']:.2f} s")
        for generator, (answers, right) in found["chosen by generator"].items():
            print(f"  chosen from {generator:12s} {answers:5d} answers ({answers / n:.1%}), {right} right")
        if first is None:
            first = found
        elif first["median latency s"]:
            ratio = found["median latency s"] / first["median latency s"]
            print(f"  median latency against {args.runs[0]}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
