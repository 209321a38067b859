"""A one-sentence explanation of a query, read off its sqlglot AST: no model tokens spent.

``describe_query("SELECT name FROM users WHERE blocked = 1 ORDER BY name")`` →
``"Reads users; filters rows (WHERE); sorts; returns name."``
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from text2sql_dspy.programs.query.names import normalize_names, written
from text2sql_dspy.programs.query.tables_read import stored_tables

__all__ = ["describe_query"]

MAX_LISTED = 4


def describe_query(sql: str, dialect: str = "sqlite") -> str:
    """What ``sql`` reads, how it shapes the rows and what it returns; "" when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        return _describe(tree, sql, dialect) if tree is not None else ""
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError, RecursionError):
        return ""  # RecursionError: a deeply nested query (sqlglot parses and renders recursively)


def _describe(tree: exp.Expression, sql: str, dialect: str) -> str:
    tables = sorted({written(t.this, sql) for t in stored_tables(normalize_names(tree.copy()))})
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    steps = []
    if tables:
        steps.append("reads " + _listed(tables))
    if tree.find(exp.Join):
        steps.append("joins them")
    if tree.find(exp.Where):
        steps.append("filters rows (WHERE)")
    if tree.find(exp.Group):
        steps.append("groups" + (" and filters groups (HAVING)" if tree.find(exp.Having) else ""))
    if tree.find(exp.Subquery) or any(isinstance(node, exp.Select) for node in tree.find_all(exp.Select)
                                      if node is not select):
        steps.append("uses a subquery")
    if tree.args.get("order") or (select is not None and select.args.get("order")):
        steps.append("sorts")
    limit = tree.args.get("limit") or (select.args.get("limit") if select is not None else None)
    if limit is not None:  # LIMIT n (exp.Limit: "expression") or FETCH FIRST n ROWS ONLY (exp.Fetch: "count")
        count = limit.args.get("expression") or limit.args.get("count")
        steps.append("keeps the first " + (count.sql(dialect=dialect) if count is not None else "row"))
    if select is not None:
        outputs = [e.alias or (e.name if isinstance(e, exp.Column) else e.sql(dialect=dialect))
                   for e in select.expressions]
        if outputs:
            steps.append("returns " + _listed(outputs))
    if not steps:
        return ""
    text = "; ".join(steps)
    return text[0].upper() + text[1:] + "."


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")
