#!/usr/bin/env python
"""The training readings the outer-column lint flags whose selected column is qualified with an enclosing alias while
exactly one table of the subquery has it: given to that table, how many become right (executed against gold)? A
repair measured, not built. No model calls. Run from the repository root:

    python benchmarks/results/outer-column-2026-12-06/requalify_check.py      # requalify-check.txt
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).parent))
from firings import SETS, _catalogs, fires  # noqa: E402

from text2sql_dspy.optimize.metrics import compare_execution  # noqa: E402
from text2sql_dspy.programs.query.lints import _enclosing, sources  # noqa: E402
from text2sql_dspy.programs.query.results import Scoring  # noqa: E402


def requalified(sql: str, catalog) -> str | None:
    """``sql`` with each subquery's selected column that names an enclosing alias given to the one table of the
    subquery that has it; None where there is none."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    changed = False
    for select in tree.find_all(exp.Select):
        if not _enclosing(select) or isinstance(select.parent, exp.Exists):
            continue
        own = sources(select, catalog)
        for projected in select.expressions:
            column = projected.unalias()
            if not isinstance(column, exp.Column) or not column.table or column.table.lower() in own:
                continue
            owners = [alias for alias, source in own.items() if source.table.column(column.name)]
            if len(owners) == 1:
                column.set("table", exp.to_identifier(owners[0]))
                changed = True
    return tree.sql(dialect="sqlite") if changed else None


def main() -> None:
    seen, flagged, fixable, right_before, right_after = set(), 0, 0, 0, 0
    for path in sorted(Path("benchmarks/results").glob("verifier-data-*/*.jsonl.gz")):
        for line in gzip.open(path, "rt"):
            record = json.loads(line)
            db = record["db_id"]
            for reading, ok in zip(record["answer"].get("readings") or [], record.get("readings_correct") or []):
                key = (db, record["question"], reading["sql"])
                if key in seen:
                    continue
                seen.add(key)
                if not fires(reading["sql"], "spider-train", db):
                    continue
                flagged += 1
                new = requalified(reading["sql"], _catalogs[("spider-train", db)])
                if new is None:
                    continue
                fixable += 1
                right_before += bool(ok)
                database = SETS / "spider-train" / "database" / db / f"{db}.sqlite"
                good = compare_execution(new, record["gold"], str(database), Scoring.SPIDER).match
                right_after += good
                print(ok, good, new[:170])
    print(f"flagged {flagged}, requalifiable {fixable}: right as drafted {right_before}, requalified {right_after}")


if __name__ == "__main__":
    main()
