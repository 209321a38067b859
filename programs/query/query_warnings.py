"""Advice on a query that is valid but probably not what was meant: ``SELECT *``, ``LIMIT`` without
``ORDER BY``, and joins that pair every row with every row. Warnings never invalidate a query.

:func:`keys_shown`, for the agents, which know the question: an answer that shows a key (a number pointing into
another table) where the question asks for no id."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import walk_in_scope

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.query.names import written

__all__ = ["SHOWS_KEY", "key_warnings", "keys_shown", "style_warnings"]

SHOWS_KEY = "shows the key"  # the words every key warning carries, for the agents to recognise
_ASKS_FOR_KEYS = re.compile(r"\b(ids?|identifiers?|numbers?|codes?|keys?)\b", re.IGNORECASE)


def style_warnings(tree: exp.Expr, sql: str) -> list[str]:
    """The warnings for ``tree`` (parsed from ``sql``), in a fixed order, each at most once."""
    found: list[str] = []
    outer = tree.unnest() if isinstance(tree, exp.Subquery) else tree
    for head in outer.find_all(exp.Select):
        if _outermost(head, outer) and any(
            isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            for e in head.expressions
        ):
            found.append("selects *: list only the columns the question asks for")
            break
    for node in tree.find_all(exp.Select, exp.SetOperation):
        if node.args.get("limit") and not node.args.get("order"):
            if isinstance(node, exp.Select) and isinstance(node.parent, exp.SetOperation):
                continue
            found.append("LIMIT without ORDER BY: which rows come back is arbitrary")
            break
    for select in tree.find_all(exp.Select):
        warning = _cartesian_warning(select, sql)
        if warning and warning not in found:
            found.append(warning)
    return found


def _cartesian_warning(select: exp.Select, sql: str) -> str | None:
    joins = select.args.get("joins") or []
    from_ = select.args.get("from_")
    if not joins or from_ is None:
        return None
    predicates = []
    where = select.args.get("where")
    if where is not None:
        predicates.append(where)
    for join in joins:
        if join.args.get("on") is not None:
            predicates.append(join.args["on"])
    linked_names: list[set[str]] = []
    for clause in predicates:
        for node in walk_in_scope(clause):
            if isinstance(node, exp.Predicate):
                names = {c.table for c in node.find_all(exp.Column) if c.table}
                if len(names) > 1:
                    linked_names.append(names)
    has_unqualified_link = any(
        isinstance(node, exp.Predicate)
        and sum(1 for c in node.find_all(exp.Column) if not isinstance(c.this, exp.Star)) > 1
        and any(not c.table for c in node.find_all(exp.Column))
        for clause in predicates
        for node in walk_in_scope(clause)
    )
    unlinked = []
    for join in joins:
        if join.args.get("on") is not None or join.args.get("using") or (join.method or "").upper() == "NATURAL":
            continue
        target = join.this
        if isinstance(target, exp.Subquery) and _single_row(target.unnest()):
            continue
        if isinstance(target, exp.Table) and not isinstance(target.this, exp.Identifier):
            continue  # table-valued function, e.g. json_each(t.col)
        name = target.alias_or_name
        if any(name in names for names in linked_names) or has_unqualified_link:
            continue
        alias = target.args.get("alias")
        unlinked.append(written(alias.this if alias is not None and alias.this is not None else target.this, sql))
    if not unlinked:
        return None
    # one warning for them all, so that it cannot crowd out the others
    shown = ", ".join(f"'{name}'" for name in unlinked)
    verb = "is" if len(unlinked) == 1 else "are"
    return (
        f"cartesian join: {shown} {verb} joined without ON/USING and no WHERE condition links "
        f"{'it' if len(unlinked) == 1 else 'them'} (every row pairs with every row): add a join condition"
    )


def _outermost(select: exp.Select, outer: exp.Expr) -> bool:
    node = select
    while node is not outer:
        parent = node.parent
        if parent is None or not isinstance(parent, exp.SetOperation | exp.Subquery):
            return False
        node = parent
    return True


def _single_row(query: exp.Expr) -> bool:
    """An aggregate without GROUP BY: a one-row derived table, harmless in a comma join."""
    return (
        isinstance(query, exp.Select)
        and not query.args.get("group")
        and bool(query.expressions)
        and all(e.find(exp.AggFunc) is not None for e in query.expressions)
    )


def keys_shown(sql: str, catalog: Catalog, question: str, dialect: str = "sqlite") -> list[str]:
    """:func:`key_warnings` of ``sql`` when ``question`` asks for no id, number, code or key; else none."""
    if _ASKS_FOR_KEYS.search(question):
        return []
    try:
        return key_warnings(sqlglot.parse_one(sql, read=dialect), catalog)
    except (SqlglotError, RecursionError, ValueError):
        return []


def key_warnings(tree: exp.Expr, catalog: Catalog) -> list[str]:
    """The outermost SELECT's columns that are a foreign key holding integers into a table with text of its own,
    while the answer shows none of that table's columns: ``SELECT eye_colour_id FROM superhero``, or ``SELECT
    T1.skin_colour_id ... JOIN colour AS T2 ON T1.skin_colour_id = T2.id``, answers with a number where
    ``colour.colour`` holds the words."""
    outer = tree.unnest() if isinstance(tree, exp.Subquery) else tree
    if not isinstance(outer, exp.Select):
        return []
    sources = {(t.alias_or_name or "").lower(): t for t in outer.find_all(exp.Table) if t.parent_select is outer}
    stored = {alias: table for alias, node in sources.items() if (table := catalog.table(node.name)) is not None}
    shown = [e.this if isinstance(e, exp.Alias) else e for e in outer.expressions]
    shown_tables = {stored[a].name.lower() for e in shown for c in e.find_all(exp.Column)
                    if (a := c.table.lower() if c.table else _only(stored, c.name)) in stored}
    found = []
    for column in shown:
        if not isinstance(column, exp.Column) or isinstance(column.this, exp.Star):
            continue
        alias = column.table.lower() if column.table else _only(stored, column.name)
        table = stored.get(alias or "")
        own = table.column(column.name) if table is not None else None
        if own is None or not own.stores_integer:
            continue
        for key, referenced, _ in table.foreign_keys:
            target = catalog.table(referenced)
            if key.lower() != own.name.lower() or target is None or target.name.lower() in shown_tables:
                continue
            keys = {c.lower() for c in target.primary_key} | {fk.lower() for fk, _, _ in target.foreign_keys}
            if any(c.stores_text and c.name.lower() not in keys for c in target.columns):
                found.append(f"the answer {SHOWS_KEY} {table.name}.{own.name}, a number pointing into {target.name}: "
                             f"show the {target.name} columns that name it")
    return list(dict.fromkeys(found))


def _only(stored: dict, column: str) -> str | None:
    """The alias of the one stored table read here that has ``column``; None if none or several."""
    owners = [alias for alias, table in stored.items() if table.column(column) is not None]
    return owners[0] if len(owners) == 1 else None
