#!/usr/bin/env python
"""The aggregate repairs (``programs/query/grouping.py``, ``requalify.py``) on the training answers alone: every stored
reading passed through today's ``DataSource.runnable`` (which change, whether they were valid, whether they now
check and return gold's rows), and, for each question with a one-table draft ranked by an aggregate it has no group
for, whether the first regrouped reading is right in catalog order, ordered by the question's words, and with the
category rule too. Reads no held-out set; asks no model. Run from the repository root:

    python benchmarks/results/ungrouped-aggregate-2026-12-05/training.py \\
        benchmarks/results/verifier-data-2026-12-05/*.jsonl.gz
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.query.grouping import regrouped_readings
from text2sql_dspy.programs.source import open_source

DATABASES = "../shared/benchmarks/spider-train/database"


def main(files: list[str]) -> None:
    changed, first, asked = Counter(), Counter(), set()
    for name in files:
        for line in gzip.open(name, "rt"):
            record = json.loads(line)
            path = f"{DATABASES}/{record['db_id']}/{record['db_id']}.sqlite"
            right = lambda sql: compare_execution(sql, record["gold"], path).match  # noqa: E731
            source = None
            for reading in (record.get("answer") or {}).get("readings", []):
                changed["readings"] += 1
                source = source or open_source(path)
                sql = source.runnable(reading["sql"])
                if sql != reading["sql"]:
                    changed["changed"] += 1
                    changed["changed, valid before"] += bool(reading.get("valid"))
                    now = source.validator.validate(sql).valid
                    changed["changed, valid now"] += now
                    changed["changed, right now"] += now and right(sql)
                if "misuse of aggregate" not in json.dumps(reading.get("findings", [])) or record["question"] in asked:
                    continue
                plain = regrouped_readings(reading["sql"], source.catalog)
                if not plain:
                    continue
                asked.add(record["question"])
                ok = lambda sql: source.validator.validate(sql).valid and right(sql)  # noqa: E731
                worded = regrouped_readings(reading["sql"], source.catalog, question=record["question"])
                both = regrouped_readings(reading["sql"], source.catalog, question=record["question"],
                                          run=lambda sql: source.database.execute(sql).rows)
                first["questions"] += 1
                first["catalog order"] += ok(plain[0])
                first["the question's words"] += ok(worded[0])
                first["words and category"] += ok(both[0])
                first["any reading"] += any(ok(sql) for sql in plain)
    print("readings through runnable:", dict(changed))
    print("first regrouped reading right:", dict(first))


if __name__ == "__main__":
    main(sys.argv[1:])
