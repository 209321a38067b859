"""SQL dialects: their names in prompts, and gold SQL written for SQLite carried to another engine.

Spider-format gold queries are SQLite. :func:`transpile_gold` rewrites one for PostgreSQL or DuckDB with
sqlglot: it first reads double-quoted names that are no column of the database as the strings SQLite takes
them for (``name = "Paris"``), then lets sqlglot translate functions and syntax.

:func:`portable` carries a drafted query over habits that PostgreSQL refuses where each has a single
meaning: an output alias named in ``WHERE`` or ``HAVING`` (SQLite and DuckDB resolve it), a division by a
value that is zero on some row (SQLite and DuckDB give NULL; PostgreSQL aborts the query), and a date
function (``EXTRACT``, ``DATE_TRUNC``, ``TO_CHAR``) over a column that stores timestamps as text.
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
# Engines that abort a query on a division by zero, where SQLite and DuckDB give NULL.
_DIVISION_BY_ZERO_RAISES = frozenset({"postgres"})
# Engines whose date functions refuse a text argument (PostgreSQL: "function extract(unknown, text) does
# not exist"); the argument of each function listed here is read as a timestamp when it is a text column.
_DATE_FUNCTIONS_NEED_TIMESTAMPS = frozenset({"postgres"})
_DATE_ARGUMENTS = {exp.Extract: "expression", exp.TimestampTrunc: "this", exp.TimeToStr: "this"}


def portable(
    sql: str, dialect: str, column_names: Iterable[str] = (), text_columns: Iterable[str] = ()
) -> str:
    """``sql`` rewritten where ``dialect`` needs it to mean what it means on SQLite; else unchanged.

    PostgreSQL: output aliases named in ``WHERE``/``HAVING`` are replaced by their expressions
    (``HAVING reset_count > 3`` -> ``HAVING COUNT(t2.id) > 3``), except a name that is also a column in
    ``column_names`` (the engine reads it as the column) or a qualified one; and every divisor that is
    not a nonzero number is guarded (``a / b`` -> ``a / NULLIF(b, 0)``), so a zero gives NULL as on SQLite;
    and a column named in ``text_columns`` (text-typed wherever it occurs) that a date function reads is cast
    (``EXTRACT(YEAR FROM occurred_at)`` -> ``EXTRACT(YEAR FROM CAST(occurred_at AS TIMESTAMP))``).
    Rewriting a rewritten query changes nothing more. ``sql`` comes back unchanged when nothing is
    rewritten or it does not parse.
    """
    if dialect not in _NO_ALIAS_IN_FILTERS | _DIVISION_BY_ZERO_RAISES | _DATE_FUNCTIONS_NEED_TIMESTAMPS:
        return sql
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    if tree is None:
        return sql
    replaced = False
    if dialect in _NO_ALIAS_IN_FILTERS:
        replaced |= _inline_filter_aliases(tree, {name.lower() for name in column_names})
    if dialect in _DIVISION_BY_ZERO_RAISES:
        replaced |= _guard_divisions(tree)
    if dialect in _DATE_FUNCTIONS_NEED_TIMESTAMPS:
        replaced |= _timestamps_for_date_functions(tree, {name.lower() for name in text_columns})
    return tree.sql(dialect=dialect) if replaced else sql


def _inline_filter_aliases(tree: exp.Expression, known: set[str]) -> bool:
    """Replace, in place, output aliases named in each SELECT's own WHERE/HAVING; True if any was."""
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
    return replaced


def _guard_divisions(tree: exp.Expression) -> bool:
    """Mark, in place, each division whose divisor may be zero as safe (written ``NULLIF(d, 0)``)."""
    guarded = False
    for division in tree.find_all(exp.Div):
        divisor = division.expression
        nonzero_constant = isinstance(divisor, exp.Literal) and not divisor.is_string and float(divisor.this) != 0
        if nonzero_constant or isinstance(divisor, exp.Nullif) or division.args.get("safe"):
            continue
        division.set("safe", True)
        guarded = True
    return guarded


def _timestamps_for_date_functions(tree: exp.Expression, text_columns: set[str]) -> bool:
    """Cast, in place, each text column that a date function reads to TIMESTAMP; True if any was."""
    cast = False
    for function, argument in _DATE_ARGUMENTS.items():
        for node in list(tree.find_all(function)):
            column = node.args.get(argument)
            if isinstance(column, exp.Column) and column.name.lower() in text_columns:
                column.replace(exp.cast(column.copy(), exp.DataType.Type.TIMESTAMP))
                cast = True
    return cast
