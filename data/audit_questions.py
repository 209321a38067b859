"""Flag bundled questions whose gold SQL may not match what the question asks for.

A guide for the person auditing ``data/{train,dev,test}.json``, not a judge: every flag needs a
reading of the question. Three kinds of flag, all found from the gold query's sqlglot AST and its
result on the built database:

* ``projection``: an output column of the outermost SELECT whose natural name does not appear in
  the question (``id``, ``email``, ``created_at`` …), when the query returns more than one column.
  Spider's and BIRD's convention: a question names every column it wants back, or the column is
  obvious (the one name of the entity asked about, or the count of "How many").
* ``order``: the outermost query has ORDER BY (so execution match compares rows in order) but the
  question has no word that asks for an order or a ranking.
* ``ties``: reordering ties of the first ORDER BY key changes the result: with LIMIT, the set of
  rows at the cut-off; without LIMIT (or within it), the order of tied rows that the question
  does not fix.

Usage::

    python data/audit_questions.py [--db PATH] [SPLIT ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import sqlglot
from sqlglot import exp

HERE = Path(__file__).resolve().parent
DEFAULT_DB = HERE / "database" / "saas" / "saas.sqlite"

ORDER_WORDS = (
    "most", "least", "top", "first", "last", "order", "sorted", "sort", "highest", "lowest", "largest",
    "smallest", "longest", "shortest", "recent", "cheapest", "best", "worst", "latest", "newest",
    "oldest", "earliest", "rank", "descending", "ascending",
)  # fmt: skip
QUANTITY_WORDS = (
    "how many", "how much", "number", "count", "total", "average", "share", "percent", "percentage",
    "rate", "fraction", "how long", "times", "sum",
)  # fmt: skip
# tokens that carry no meaning of their own in a column name
SILENT = {"at", "cents", "is", "n", "usd", "eur", "gbp", "ms", "pct"}
# a few natural names for column-name tokens
SYNONYMS = {
    "full": ("name", "who"),
    "name": ("name", "which", "who"),
    "occurred": ("when", "time", "date"),
    "created": ("when", "created", "date", "since"),
    "email": ("email", "e-mail"),
    "id": ("id", "ids", "identifier", "number"),
    "key": ("key", "flag"),
}


def output_columns(tree: exp.Expression) -> list[tuple[str, exp.Expression]]:
    """(name, expression) of each column of the outermost SELECT (of its first branch for a set operation)."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return []
    return [(e.alias_or_name, e.unalias()) for e in select.expressions]


def _mentioned(name: str, expression: exp.Expression, question: str) -> bool:
    q = question.lower()
    if expression.find(exp.AggFunc) is not None or not isinstance(expression, exp.Column):
        if any(w in q for w in QUANTITY_WORDS):
            return True
    tokens = [t for t in re.split(r"[_\W]+", name.lower()) if t and t not in SILENT]
    if not tokens:
        return True
    for token in tokens:
        words = (token, *SYNONYMS.get(token, ()))
        if any(re.search(rf"\b{re.escape(w[:5])}", q) for w in words if len(w) >= 2):
            return True
    return False


def projection_flags(question: str, tree: exp.Expression) -> list[str]:
    columns = output_columns(tree)
    if len(columns) <= 1:
        return []
    return [name for name, expression in columns if not _mentioned(name, expression, question)]


def order_flag(question: str, tree: exp.Expression) -> bool:
    if not isinstance(tree, exp.Query) or tree.args.get("order") is None:
        return False
    q = question.lower()
    return not any(re.search(rf"\b{w}", q) for w in ORDER_WORDS)


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def tie_flags(conn: sqlite3.Connection, tree: exp.Expression) -> list[str]:
    """Whether tied rows of the first ORDER BY key change the set (LIMIT) or the order of the result."""
    order = tree.args.get("order") if isinstance(tree, exp.Query) else None
    if order is None:
        return []
    width = len(output_columns(tree))
    first = order.expressions[0]
    results = []
    for desc in (False, True):
        probe = tree.copy()
        breakers = [exp.Ordered(this=exp.Literal.number(i + 1), desc=desc) for i in range(width)]
        probe.set("order", exp.Order(expressions=[first.copy(), *breakers]))
        results.append(_rows(conn, probe.sql(dialect="sqlite")))
    flags = []
    if Counter(results[0]) != Counter(results[1]):
        flags.append("ties at the LIMIT cut-off")
    elif results[0] != results[1]:
        flags.append("tied rows in an ordered result")
    return flags


def audit(records: list[dict], conn: sqlite3.Connection) -> list[tuple[int, list[str]]]:
    out = []
    for i, record in enumerate(records):
        tree = sqlglot.parse_one(record["query"], read="sqlite")
        flags = []
        missing = projection_flags(record["question"], tree)
        if missing:
            flags.append(f"projection: {', '.join(missing)} not named")
        if order_flag(record["question"], tree):
            flags.append("order: ORDER BY, but the question asks for no order")
        flags += [f"ties: {t}" for t in tie_flags(conn, tree)]
        if flags:
            out.append((i, flags))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("splits", nargs="*", default=["train", "dev", "test"])
    parser.add_argument("--db", default=str(DEFAULT_DB))
    parser.add_argument("--data", default=str(HERE))
    args = parser.parse_args(argv)
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    total = 0
    for split in args.splits:
        records = json.loads((Path(args.data) / f"{split}.json").read_text(encoding="utf-8"))
        for i, flags in audit(records, conn):
            total += 1
            print(f"{split}[{i}] {records[i]['question']}")
            for flag in flags:
                print(f"    {flag}")
    print(f"{total} questions flagged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
