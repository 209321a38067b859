"""SQL dialects: their names in prompts, and gold SQL written for SQLite carried to another engine.

Spider-format gold queries are SQLite. :func:`transpile_gold` rewrites one for PostgreSQL or DuckDB with
sqlglot: it first reads double-quoted names that are no column of the database as the strings SQLite takes
them for (``name = "Paris"``), then lets sqlglot translate functions and syntax.

:func:`portable` carries a drafted query over one habit that SQLite and DuckDB accept and PostgreSQL
refuses, where it has a single meaning: an output alias named in ``WHERE`` or ``HAVING``.
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


# Engines that resolve an output alias only in ORDER BY (and GROUP BY), not in WHERE or HAVING.
_NO_ALIAS_IN_FILTERS = frozenset({"postgres"})


def portable(sql: str, dialect: str, column_names: Iterable[str] = ()) -> str:
    """``sql`` with output aliases named in its ``WHERE``/``HAVING`` replaced by their expressions, where
    ``dialect`` needs that (PostgreSQL: ``HAVING reset_count > 3`` -> ``HAVING COUNT(t2.id) > 3``).

    A name that is also a column in ``column_names`` is left alone (the engine reads it as the column),
    and so is a qualified one. ``sql`` comes back unchanged when nothing is replaced or it does not parse.
    """
    if dialect not in _NO_ALIAS_IN_FILTERS:
        return sql
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    if tree is None:
        return sql
    known = {name.lower() for name in column_names}
    replaced = False
    for select in tree.find_all(exp.Select):
        aliases = {
            p.alias.lower(): p.this for p in select.expressions
            if isinstance(p, exp.Alias) and p.alias and p.alias.lower() not in known
        }
        if not aliases:
            continue
        for clause in (select.args.get("where"), select.args.get("having")):
            if clause is None:
                continue
            for column in list(clause.find_all(exp.Column)):
                name = column.name.lower()
                if not column.table and name in aliases and column.find_ancestor(exp.Select) is select:
                    expression = aliases[name].copy()
                    atomic = isinstance(expression, exp.Column | exp.Func | exp.Literal)
                    column.replace(expression if atomic else exp.Paren(this=expression))
                    replaced = True
    return tree.sql(dialect=dialect) if replaced else sql
