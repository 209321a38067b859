"""A column named on the wrong table, moved to the one table of its query level that has it: no model call.

``SELECT T2.position FROM superhero AS T1 JOIN hero_power AS T2 ...`` names ``position`` on
``hero_power``, which lacks it; when exactly one stored table read at that query level has the column,
:func:`requalified` rewrites the qualifier to that table's alias. Anything else is left as written,
for the validator to report: a column no table has, or one that two tables have.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from text2sql_dspy.programs.db.catalog import Catalog

__all__ = ["requalified"]


def requalified(sql: str, catalog: Catalog, dialect: str = "sqlite") -> str:
    """``sql`` with each wrongly qualified column requalified where one reading exists; else ``sql`` unchanged."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        changed = tree is not None and _requalify(tree, catalog)
        return tree.sql(dialect=dialect) if changed else sql
    except (SqlglotError, RecursionError, ValueError):
        return sql


def _requalify(tree: exp.Expr, catalog: Catalog) -> bool:
    changed = False
    for scope in traverse_scope(tree):
        if not all(isinstance(source, exp.Table) for source in scope.sources.values()):
            continue  # a derived table may expose the column: more than one reading
        tables = {alias.lower(): catalog.table(source.name) for alias, source in scope.sources.items()}
        for column in scope.columns:
            qualifier = column.table.lower()
            table = tables.get(qualifier)
            if not qualifier or table is None or table.column(column.name) is not None:
                continue
            owners = [alias for alias, t in tables.items() if t is not None and t.column(column.name) is not None]
            if len(owners) == 1:
                alias = next(a for a in scope.sources if a.lower() == owners[0])
                column.set("table", exp.to_identifier(alias))
                changed = True
    return changed
