#!/usr/bin/env python
"""How often one lint fires, and on what, before it ships: every distinct reading of the committed training answers
(the collector's files, spider-train and CoSQL over spider-train's databases) with whether it was right, and every
gold query of spider-train, Spider dev and bird-public (gold is right, so a firing there is a defect of the gold or a
false alarm). The lint is today's, run as the validator runs it (one that raises says nothing). Reads no held-out
answer; asks nothing of the model. Run from the repository root:

    python benchmarks/lint_on_training.py LINT [COLLECTED ...] [--benchmarks ../shared/benchmarks]

LINT names one of the validator's lints (``programs/query/validator.py``'s ``LINTS``: ``outer_column``,
``cartesian_join``, ...). COLLECTED: the collector's ``.jsonl.gz`` files (default: every
``benchmarks/results/verifier-data-*/*.jsonl.gz``). :func:`fires` is also ``benchmarks/affected_split.py``'s
``--lint``.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import sqlglot

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.lints import Query
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.validator import LINTS, Rule
from text2sql_dspy.programs.source import open_source

COLLECTED = "benchmarks/results/verifier-data-*/*.jsonl.gz"
GOLD = (("spider-train", "train"), ("spider-public", "dev"), ("bird-public", "dev"))  # (set, split) under --benchmarks
_catalogs: dict[Path, Catalog] = {}


def lint_named(name: str) -> Rule:
    """The validator's lint called ``name``."""
    found = {lint.__name__: lint for lint in LINTS}
    if name not in found:
        raise SystemExit(f"no lint {name!r}; the validator's lints: {', '.join(sorted(found))}")
    return found[name]


def database_of(root: Path, db: str) -> Path:
    """A Spider-format folder's SQLite file of database ``db``."""
    return root / "database" / db / f"{db}.sqlite"


def fires(lint: Rule, sql: str, database: Path, question: str = "") -> bool:
    """Whether ``lint`` finds anything in ``sql`` over ``database``'s catalog (a query that does not parse: no)."""
    if database not in _catalogs:
        _catalogs[database] = open_source(database).catalog
    catalog = _catalogs[database]
    try:
        tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    except sqlglot.errors.SqlglotError:
        return False
    try:
        return bool(list(lint(Query(tree, sql, catalog, CatalogSchema(catalog), question=question))))
    except Exception:  # as the validator runs a lint: one that raises says nothing
        return False


def training(lint: Rule, files: list[Path], databases: Path) -> str:
    """The distinct readings of the collected answers, those the lint fires on, and how many of each are right."""
    seen, readings, flagged, right, others_right = set(), 0, 0, 0, 0
    for path in files:
        for line in gzip.open(path, "rt"):
            record = json.loads(line)
            outcomes = record.get("readings_correct") or []
            for reading, ok in zip(record["answer"].get("readings") or [], outcomes):
                key = (record["db_id"], record["question"], reading["sql"])
                if key in seen:
                    continue
                seen.add(key)
                readings += 1
                if fires(lint, reading["sql"], database_of(databases, record["db_id"]), record["question"]):
                    flagged += 1
                    right += bool(ok)
                else:
                    others_right += bool(ok)
    return (f"training readings (distinct): {readings}; the lint fires on {flagged}, of which {right} right "
            f"({right / max(1, flagged):.1%}); the others {others_right} of {readings - flagged} right "
            f"({others_right / max(1, readings - flagged):.1%})")


def gold(lint: Rule, root: Path, split: str) -> str:
    """The set's gold queries the lint fires on."""
    items = json.loads((root / f"{split}.json").read_text())
    hits = [q for q in items
            if fires(lint, q.get("query") or q.get("SQL"), database_of(root, q["db_id"]), q.get("question", ""))]
    return f"{root.name} gold: {len(hits)} of {len(items)} fire" + "".join(f"\n  {q['db_id']}: {q.get('query')}"
                                                                      for q in hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lint", help="the lint's name, as outer_column")
    parser.add_argument("collected", nargs="*", type=Path, help=f"collected answers (default: {COLLECTED})")
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"),
                        help="the folder holding spider-train, spider-public and bird-public")
    args = parser.parse_args(argv)
    lint = lint_named(args.lint)
    root = args.benchmarks.resolve()
    print(training(lint, sorted(args.collected or Path().glob(COLLECTED)), root / "spider-train"))
    for name, split in GOLD:
        print(gold(lint, root / name, split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
