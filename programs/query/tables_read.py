"""The tables a query reads, found with sqlglot's scopes: stored tables only, never a CTE's name,
a derived table or a table-valued function.

A name counts as a stored table exactly where sqlglot's scope sees no CTE of that name (compared
case-insensitively), so a CTE that shadows a table, or a table named like a CTE of another query
level, is told apart.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from text2sql_dspy.programs.query.names import normalize_names

__all__ = ["DEFAULT_SCHEMAS", "scope_sources", "stored_tables", "table_sources", "tables_read"]

# Schemas a bare table name lives in, per dialect.
DEFAULT_SCHEMAS = {
    "sqlite": frozenset({"main", "temp"}),
    "postgres": frozenset({"public"}),
    "duckdb": frozenset({"main"}),
}


def tables_read(sql: str, dialect: str = "sqlite") -> set[str]:
    """Lower-cased names of the stored tables ``sql`` reads; empty if it does not parse.

    A table outside the dialect's default schema is named ``schema.table``, as the catalog names it.
    """
    try:
        trees = sqlglot.parse(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return set()
    defaults = DEFAULT_SCHEMAS.get(dialect, frozenset())
    names = set()
    for tree in trees:
        if tree is None:
            continue
        for table in stored_tables(normalize_names(tree)):
            db = table.text("db").lower()
            names.add(f"{db}.{table.name.lower()}" if db and db not in defaults else table.name.lower())
    return names


def table_sources(scopes: list[Scope]) -> list[exp.Table]:
    """Every ``exp.Table`` the scopes select from (stored tables and table-valued functions), scope by scope."""
    return [source for scope in scopes for _, source in scope_sources(scope) if isinstance(source, exp.Table)]


def scope_sources(scope: Scope) -> list[tuple[str, exp.Table | Scope]]:
    """(name, source) for each FROM/JOIN item of the scope, in order.

    Unlike ``Scope.selected_sources`` this keeps a name that is used twice (``FROM t JOIN t``):
    an error for the database to report, not a reason to stop checking.
    """
    return [(name, scope.sources[name]) for name, _node in scope.references if name in scope.sources]


def stored_tables(tree: exp.Expr) -> list[exp.Table]:
    """The ``exp.Table`` nodes of ``tree`` that name stored tables, scope by scope.

    Names are matched as they stand in ``tree``: normalize it first (:func:`~.names.normalize_names`)
    for a CTE called ``Recent`` to be the one ``FROM recent`` reads.

    Where sqlglot cannot build the scopes, every table whose name no CTE of the query takes.
    """
    try:
        sources = table_sources(traverse_scope(tree))
    except (SqlglotError, RecursionError):  # sqlglot's scope builder refuses some exotic shapes
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        sources = [t for t in tree.find_all(exp.Table) if t.name.lower() not in ctes]
    return [t for t in sources if isinstance(t.this, exp.Identifier) and t.name]
