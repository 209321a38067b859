"""A column named on the wrong table, moved to the table that has it: no model call.

``SELECT T2.superhero_name FROM superhero AS T1 JOIN hero_power AS T2 ...`` names ``superhero_name`` on
``hero_power``, which lacks it. :func:`requalified` rewrites the qualifier when one reading exists:

* exactly one stored table read at that query level has the column: its alias (also for a qualifier that the
  query never defines, ``T2.song_name`` where only ``T1`` and ``T3`` are read);
* none does, but exactly one table joined by a declared key to the named one has it
  (``T2.power_name`` on ``hero_power``, whose ``power_id`` references ``superpower``): that table is
  joined along the key, and the column named on it.

Anything else is left as written, for the validator to report.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from text2sql_dspy.programs.db.catalog import Catalog, Table

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
    scopes = traverse_scope(tree)
    defined = {alias.lower() for scope in scopes for alias in scope.sources}  # in this scope or an enclosing one
    for scope in scopes:
        if not all(isinstance(source, exp.Table) for source in scope.sources.values()):
            continue  # a derived table may expose the column: more than one reading
        tables = {alias.lower(): catalog.table(source.name) for alias, source in scope.sources.items()}
        spelled = {alias.lower(): alias for alias in scope.sources}  # grows with the tables joined below
        for column in scope.columns:
            qualifier = column.table.lower()
            table = tables.get(qualifier)
            undefined = bool(qualifier) and qualifier not in defined  # 'T2' where only T1 and T3 are read
            if not undefined and (table is None or table.column(column.name) is not None):
                continue  # unqualified, an enclosing query's, or right as written
            owners = [alias for alias, t in tables.items() if t is not None and t.column(column.name) is not None]
            if len(owners) == 1:
                column.set("table", exp.to_identifier(spelled[owners[0]]))
                changed = True
            elif not owners and not undefined and isinstance(scope.expression, exp.Select):
                joined = _join_owner(scope.expression, column, table, catalog, set(tables))
                if joined is not None:
                    tables[joined[0].lower()] = joined[1]
                    spelled[joined[0].lower()] = joined[0]
                    changed = True
    return changed


def _join_owner(select: exp.Select, column: exp.Column, table: Table, catalog: Catalog,
                taken: set[str]) -> tuple[str, Table] | None:
    """Join the one table linked to ``table`` by a declared key that has ``column``: its new alias and the table."""
    links = [(fk, ref_table, ref_col) for fk, ref_table, ref_col in table.foreign_keys]  # table.fk -> ref.col
    links += [(ref_col, t.name, fk) for t in catalog.tables for fk, ref_table, ref_col in t.foreign_keys
              if ref_table.lower() == table.name.lower() and t is not table]  # other.fk -> table.ref_col
    found = [(mine, other, theirs) for mine, other, theirs in links
             if (t := catalog.table(other)) is not None and t.column(column.name) is not None]
    if len(found) != 1:
        return None
    mine, other, theirs = found[0]
    alias = _new_alias(other, taken, column.table)
    select.join(exp.to_table(other).as_(alias), on=exp.EQ(this=exp.column(mine, column.table),
                                                          expression=exp.column(theirs, alias)),
                join_type="INNER", copy=False)
    column.set("table", exp.to_identifier(alias))
    return alias, catalog.table(other)


def _new_alias(table: str, taken: set[str], like: str) -> str:
    """``T<n>`` where the query names its tables so, else the table's own name; never one already used."""
    if like[:1].upper() == "T" and like[1:].isdigit():
        n = 1
        while f"t{n}" in taken:
            n += 1
        return f"T{n}"
    alias, n = table, 2
    while alias.lower() in taken:
        alias, n = f"{table}_{n}", n + 1
    return alias
