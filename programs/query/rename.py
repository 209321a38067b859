"""Tables renamed in a query's AST: the names a prompt showed, written back as the names the database stores.

:func:`rename_tables` renames every stored table a query reads by a map of lower-cased names, keeping the old name
as the table's alias where a column is qualified by it (``FROM singer`` -> ``FROM concert_singer__singer AS singer``
when the query says ``singer.name``). The schema view shows a namespace's tables by their own names
(:func:`namespace`), and the program renames the draft back before it is checked; the merged large-schema benchmark
(``benchmarks/merge_schemas.py``) rewrites its gold queries the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = ["NAMESPACE_SEPARATOR", "cte_names", "column_qualifiers", "namespace", "rename_tables", "renamed", "without"]

# ``<namespace>__<table>``: dbt's source tables (``stg_stripe__payments``), several databases kept in one SQLite file
NAMESPACE_SEPARATOR = "__"


def cte_names(tree: exp.Expr) -> set[str]:
    """The lower-cased names the query's ``WITH`` clauses define (a ``FROM`` of one is not a stored table)."""
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def column_qualifiers(tree: exp.Expr) -> set[str]:
    """The lower-cased table names or aliases that qualify a column anywhere in the query (``singer`` in
    ``singer.name`` and ``singer.*``)."""
    return {column.table.lower() for column in tree.find_all(exp.Column) if column.table}


def rename_tables(tree: exp.Expr, names: Mapping[str, str]) -> exp.Expr:
    """A copy of ``tree`` with every stored table in ``names`` (keys lower-cased) renamed, in every scope:
    subqueries, joins, set operations. Tables named in ``WITH``, tables with a schema prefix and tables not in
    ``names`` stay as they are. A renamed table without an alias gets its old name as alias when some column is
    qualified by that name, so ``singer.name`` still resolves; columns themselves are never touched, so a column
    named like a table keeps its name."""
    tree = tree.copy()
    local = cte_names(tree)
    qualifiers = column_qualifiers(tree)
    for table in list(tree.find_all(exp.Table)):
        key = table.name.lower()
        if key not in names or key in local or table.args.get("db") or not isinstance(table.this, exp.Identifier):
            continue
        if not table.alias and key in qualifiers:
            table.set("alias", exp.TableAlias(this=table.this.copy()))
        table.set("this", exp.to_identifier(names[key]))
    return tree


def renamed(sql: str, names: Mapping[str, str], dialect: str = "sqlite") -> str:
    """``sql`` with its tables renamed by :func:`rename_tables`; unchanged where ``names`` is empty, no table it
    reads is in ``names``, or it does not parse (the validator reports that)."""
    if not names:
        return sql
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        if tree is None or not any(t.name.lower() in names for t in tree.find_all(exp.Table)):
            return sql
        return rename_tables(tree, names).sql(dialect=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return sql


def namespace(shown: Iterable[str], stored: Iterable[str]) -> str:
    """The ``<namespace>__`` prefix that every table of ``shown`` (two or more) has, where each of their names
    without it is a name of its own: not empty, not starting with a digit, and no table of ``stored`` (every name
    in the database); "" where there is none."""
    shown = [name.lower() for name in shown]
    if len(shown) < 2:
        return ""
    common = os.path.commonprefix(shown)
    cut = common.rfind(NAMESPACE_SEPARATOR)
    if cut <= 0:
        return ""
    prefix = common[: cut + len(NAMESPACE_SEPARATOR)]
    taken = {name.lower() for name in stored}
    rest = [name[len(prefix):] for name in shown]
    if any(not name or name[0].isdigit() or name in taken for name in rest):
        return ""
    return prefix


def without(name: str, prefix: str) -> str:
    """``name`` without ``prefix`` (lower-cased, as :func:`namespace` gives it) where it starts with it; else
    ``name``."""
    return name[len(prefix):] if prefix and name.lower().startswith(prefix) else name
