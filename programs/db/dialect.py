"""SQL dialects: their names in prompts, and gold SQL written for SQLite carried to another engine.

Spider-format gold queries are SQLite. :func:`transpile_gold` rewrites one for PostgreSQL or DuckDB with
sqlglot: it first reads double-quoted names that are no column of the database as the strings SQLite takes
them for (``name = "Paris"``), then lets sqlglot translate functions and syntax.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

DIALECT_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL"}


class TranspileError(ValueError):
    """A gold query sqlglot cannot carry to the target dialect."""


def transpile_gold(sql: str, dialect: str, column_names: Iterable[str] = ()) -> str:
    """``sql`` (SQLite) in ``dialect``; unchanged for SQLite. Raises :class:`TranspileError` when it cannot."""
    if dialect == "sqlite":
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError as exc:
        raise TranspileError(f"cannot parse the gold query: {str(exc)[:200]}") from None
    known = {name.lower() for name in column_names}
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for column in list(tree.find_all(exp.Column)):
        ident = column.this
        if (
            isinstance(ident, exp.Identifier)
            and ident.quoted
            and not column.table
            and ident.this.lower() not in known | aliases
        ):
            column.replace(exp.Literal.string(ident.this))
    try:
        return tree.sql(dialect=dialect, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise TranspileError(f"cannot write the gold query in {dialect}: {str(exc)[:200]}") from None
