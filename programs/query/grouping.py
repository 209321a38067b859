"""An aggregate that ranks rows no GROUP BY makes: ``SELECT name FROM party ORDER BY COUNT(*) DESC LIMIT 1``.

A SELECT with no GROUP BY and no aggregate among its columns reads one row per row; an aggregate in its ORDER BY
or WHERE has no group to count, and SQLite answers only "misuse of aggregate". Three answers to that, the
transforms kept apart from the check:

* :func:`regrouped` transforms: where the query joins tables, it ranks the values it shows by the joined rows, so it
  groups by the columns it shows (``GROUP BY T1.name``);
* :func:`ungrouped_aggregate` validates: the error, with what a redraft needs: the tables whose rows refer to the
  table read, each with its join, and grouping by the columns shown;
* :func:`regrouped_readings` writes, for a query of one table, each of those as a query of its own, the likeliest
  first (the agent takes the first that checks).

An aggregate of a window (``COUNT(*) OVER ()``) or of a subquery belongs to no such SELECT and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.query.filter_lints import name_words, named, words_of
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.lints import Query, sources

__all__ = ["regrouped", "regrouped_readings", "ungrouped", "ungrouped_aggregate"]

MAX_REFERRING = 3  # joins suggested to a redraft, or offered as readings
CATEGORY_ROWS = 1.25  # rows per distinct value at which a column shown is a category


def ungrouped(select: exp.Select) -> list[exp.AggFunc]:
    """The aggregates in ``select``'s ORDER BY and WHERE that it has no group for: none where it groups or shows an
    aggregate (then it is one group)."""
    if select.args.get("group") or any(_own(a, select) for e in select.expressions for a in e.find_all(exp.AggFunc)):
        return []
    clauses = [c for c in (select.args.get("order"), select.args.get("where")) if c is not None]
    return [a for clause in clauses for a in clause.find_all(exp.AggFunc) if _own(a, select)]


def _own(aggregate: exp.AggFunc, select: exp.Select) -> bool:
    """Whether ``aggregate`` is ``select``'s: not a window's, not a subquery's."""
    return not isinstance(aggregate.parent, exp.Window) and aggregate.parent_select is select


def regrouped(sql: str, dialect: str = "sqlite") -> str:
    """``sql`` with each joining SELECT whose ORDER BY ranks by an aggregate it has no group for grouped by the
    columns it shows; else ``sql`` unchanged. A SELECT of one table is left to :func:`regrouped_readings`: which
    rows it means to count is not in the query."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return sql
    changed = False
    for select in list(tree.find_all(exp.Select)):
        if select.args.get("joins") and _ranked_only(select) and (group := _group_of(select)):
            select.set("group", exp.Group(expressions=group))
            changed = True
    return tree.sql(dialect=dialect) if changed else sql


def regrouped_readings(sql: str, catalog: Catalog, dialect: str = "sqlite", question: str = "",
                       run: Callable[[str], list[tuple]] | None = None) -> list[str]:
    """For the first SELECT of one stored table ranked by an aggregate it has no group for: ``sql`` once per table
    whose rows refer to that table, joined along the key and grouped by the key it references (each column of the
    SELECT qualified first), those whose name a word of ``question`` names first; and ``sql`` grouped by the columns
    it shows, last, or first where ``run`` (a query's rows) finds the one column shown a category of the table
    (:func:`_repeats`: its rows are counted per value). None where there is no such SELECT."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return []
    selects = list(tree.find_all(exp.Select))
    at = next((i for i, s in enumerate(selects)
               if not s.args.get("joins") and len(sources(s, catalog)) == 1 and _ranked_only(s)), None)
    if at is None:
        return []
    (source,) = sources(selects[at], catalog).values()
    name = source.node.alias_or_name
    asked = words_of(question)
    referring = sorted(catalog.referring(source.table),
                       key=lambda r: not any(named(word, asked) for word in name_words(r[0].name)))
    readings = []
    for table, column, key in referring[:MAX_REFERRING]:
        if table.name.lower() == name.lower():
            continue
        copy = tree.copy()
        select = list(copy.find_all(exp.Select))[at]
        for own in select.find_all(exp.Column):
            if not own.table and own.parent_select is select:
                own.set("table", exp.to_identifier(name))
        select.join(exp.to_table(table.name), on=exp.EQ(this=exp.column(column, table.name),
                                                         expression=exp.column(key, name)), copy=False)
        select.set("group", exp.Group(expressions=[exp.column(key, name)]))
        readings.append(copy.sql(dialect=dialect))
    copy = tree.copy()
    select = list(copy.find_all(exp.Select))[at]
    if group := _group_of(select):
        select.set("group", exp.Group(expressions=group))
        reading = copy.sql(dialect=dialect)
        if run is not None and len(group) == 1 and _repeats(group[0], source.node, run, dialect):
            readings.insert(0, reading)
        else:
            readings.append(reading)
    return readings


def _repeats(shown: exp.Expr, table: exp.Table, run: Callable[[str], list[tuple]], dialect: str) -> bool:
    """Whether ``shown`` is a category of ``table``: its values in :data:`CATEGORY_ROWS` rows each or more, on
    average (a name that a few rows share is not one)."""
    count = exp.select(exp.Count(this=exp.Star()), exp.Count(this=exp.Distinct(expressions=[shown.copy()])))
    rows = run(count.from_(table.copy()).sql(dialect=dialect))
    counts = rows[0] if rows and len(rows[0]) == 2 and all(isinstance(n, int) for n in rows[0]) else (0, 0)
    return counts[0] >= CATEGORY_ROWS * counts[1] > 0


def _ranked_only(select: exp.Select) -> bool:
    """Whether ``select`` has aggregates it has no group for, all in its ORDER BY (grouping mends no WHERE)."""
    aggregates = ungrouped(select)
    return bool(aggregates) and all(a.find_ancestor(exp.Order, exp.Where).key == "order" for a in aggregates)


def _group_of(select: exp.Select) -> list[exp.Expr]:
    """The columns ``select`` shows (each expression that reads one), as GROUP BY expressions."""
    return [e.unalias().copy() for e in select.expressions if e.find(exp.Column) is not None]


def ungrouped_aggregate(query: Query) -> list[Finding]:
    """An error for each SELECT with an aggregate it has no group for (:func:`ungrouped`), with the joins that
    would give it rows to count."""
    found = []
    for select in query.tree.find_all(exp.Select):
        aggregates = ungrouped(select)
        if not aggregates:
            continue
        written = aggregates[0].sql(dialect=query.dialect)
        if isinstance(aggregates[0].find_ancestor(exp.Order, exp.Where), exp.Where):
            message = f"{written} in WHERE: an aggregate is never allowed there (HAVING after GROUP BY, or a subquery)"
        else:
            message = f"{written} in ORDER BY of a query with no GROUP BY: there is no group to count"
        found.append(Finding(kind=Kind.UNGROUPED_AGGREGATE, message=message, where=written,
                             suggestions=tuple(_suggestions(select, query.catalog, query.dialect))))
    return found


def _suggestions(select: exp.Select, catalog: Catalog, dialect: str) -> list[str]:
    found = sources(select, catalog)
    hints = []
    if len(found) == 1:
        (source,) = found.values()
        name = source.node.alias_or_name
        for table, column, key in catalog.referring(source.table)[:MAX_REFERRING]:
            hints.append(f"to rank each {source.table.name} by how many {table.name} rows refer to it: "
                         f"JOIN {table.name} ON {table.name}.{column} = {name}.{key} GROUP BY {name}.{key}")
    if shown := _group_of(select):
        columns = ", ".join(e.sql(dialect=dialect) for e in shown)
        hints.append(f"to count the rows of each value shown: GROUP BY {columns}")
    return hints
