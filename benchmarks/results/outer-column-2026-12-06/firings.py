#!/usr/bin/env python
"""How often the outer-column lint (``lints.outer_column``) fires, and on what: every distinct reading of the
committed training answers (``../verifier-data-*/``, spider-train and CoSQL over spider-train's databases) with
whether it was right, and every gold query of spider-train, Spider dev and bird-public (gold is right, so a firing
there is either a defect of the gold or a false alarm). Makes no model calls. Run from the repository root:

    python benchmarks/results/outer-column-2026-12-06/firings.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import sqlglot

from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.lints import Query, outer_column
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.source import open_source

SETS = Path("../shared/benchmarks").resolve()
_catalogs: dict[tuple[str, str], object] = {}


def fires(sql: str, root: str, db: str) -> bool:
    if (root, db) not in _catalogs:
        _catalogs[(root, db)] = open_source(SETS / root / "database" / db / f"{db}.sqlite").catalog
    catalog = _catalogs[(root, db)]
    try:
        tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    except sqlglot.errors.SqlglotError:
        return False
    return bool(outer_column(Query(tree, sql, catalog, CatalogSchema(catalog))))


def main() -> None:
    seen, readings, flagged, right, others_right = set(), 0, 0, 0, 0
    for path in sorted(Path("benchmarks/results").glob("verifier-data-*/*.jsonl.gz")):
        for line in gzip.open(path, "rt"):
            record = json.loads(line)
            outcomes = record.get("readings_correct") or []
            for reading, ok in zip(record["answer"].get("readings") or [], outcomes):
                key = (record["db_id"], record["question"], reading["sql"])
                if key in seen:
                    continue
                seen.add(key)
                readings += 1
                if fires(reading["sql"], "spider-train", record["db_id"]):
                    flagged += 1
                    right += bool(ok)
                else:
                    others_right += bool(ok)
    print(f"training readings (distinct): {readings}; the lint fires on {flagged}, of which {right} right "
          f"({right / max(1, flagged):.1%}); the others {others_right} of {readings - flagged} right "
          f"({others_right / max(1, readings - flagged):.1%})")
    for root, split in (("spider-train", "train"), ("spider-public", "dev"), ("bird-public", "dev")):
        items = json.loads((SETS / root / f"{split}.json").read_text())
        hits = [q for q in items if fires(q.get("query") or q.get("SQL"), root, q["db_id"])]
        print(f"{root} gold: {len(hits)} of {len(items)} fire" + "".join(f"\n  {q['db_id']}: {q.get('query')}"
                                                                     for q in hits))


if __name__ == "__main__":
    main()
