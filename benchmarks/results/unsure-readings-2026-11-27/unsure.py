"""Unsure answers in kept V2 runs: how often the first reading is right, and how often either of the two is.

Usage (from the repository root): python benchmarks/results/unsure-readings-2026-11-27/unsure.py RECORDS.jsonl ...

An answer is unsure when its record carries two or more ``alternatives`` (V2's two leading result groups were
within the unsure margin). Each alternative is run on the SQLite copy and compared with the gold query's rows
(the project's ``results_match``), as ``text2sql evaluate`` scores an answer. No model call.
"""
import json
import sys
from pathlib import Path

from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.db.results import is_ordered, results_match
from text2sql_dspy.programs.db.source import open_source

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "benchmarks"
sources = {}


def source(db_id):
    if db_id not in sources:
        found = list(SHARED.glob(f"*/database/{db_id}/{db_id}.sqlite"))
        sources[db_id] = open_source(found[0] if found else ensure_bundled_database())
    return sources[db_id]


def right(src, sql, gold):
    """Whether ``sql`` returns the gold query's rows on ``src`` (a query that fails is wrong)."""
    try:
        return results_match(src.database.execute(sql), src.database.execute(gold), ordered=is_ordered(gold))
    except Exception:
        return False


def main():
    totals = [0, 0, 0, 0]
    for records in sys.argv[1:]:
        n = unsure = first = either = 0
        for line in open(records):
            r = json.loads(line)
            n += 1
            alternatives = r.get("alternatives") or []
            if len(alternatives) < 2:
                continue
            src = source(r["db_id"])
            unsure += 1
            first += bool(r["correct"])
            either += bool(r["correct"]) or any(right(src, sql, r["gold"]) for sql in alternatives[:2])
        print(f"{records}: answers {n}, unsure {unsure}, first reading right {first}, either right {either}")
        totals = [a + b for a, b in zip(totals, (n, unsure, first, either))]
    n, unsure, first, either = totals
    print(f"all: answers {n}, unsure {unsure}, first reading right {first} ({first / unsure:.1%}), "
          f"either right {either} ({either / unsure:.1%}): +{(either - first) / unsure * 100:.1f} points")


if __name__ == "__main__":
    main()
