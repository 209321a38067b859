"""Advice on a query that is valid but probably not what was meant: ``SELECT *``, ``LIMIT`` without
``ORDER BY``, joins that pair every row with every row, and (:func:`key_warnings`) an answer that shows a
key where the table it joins holds the words. Warnings never invalidate a query."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import walk_in_scope

from text2sql_dspy.programs.db.catalog import Catalog
from text2sql_dspy.programs.db.names import written

__all__ = ["SHOWS_KEY", "key_warnings", "style_warnings"]

SHOWS_KEY = "shows the key"  # the words every key warning carries, for the agents to recognise


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


def key_warnings(tree: exp.Expr, catalog: Catalog) -> list[str]:
    """The outermost SELECT's columns that are a foreign key whose table the query joins along that key, while it
    shows none of that table's columns: ``SELECT T1.skin_colour_id ... JOIN colour AS T2 ON T1.skin_colour_id =
    T2.id`` answers with a number where ``T2.colour`` holds the words."""
    outer = tree.unnest() if isinstance(tree, exp.Subquery) else tree
    select = outer if isinstance(outer, exp.Select) else None
    if select is None:
        return []
    sources = {(t.alias_or_name or "").lower(): t for t in select.find_all(exp.Table) if t.parent_select is select}
    shown = [e.this if isinstance(e, exp.Alias) else e for e in select.expressions]
    shown_tables = {c.table.lower() for e in shown for c in e.find_all(exp.Column) if c.table}
    found = []
    for column in shown:
        if not isinstance(column, exp.Column) or not column.table or column.table.lower() not in sources:
            continue
        table = catalog.table(sources[column.table.lower()].name)
        for key, referenced, _ in table.foreign_keys if table is not None else []:
            if key.lower() != column.name.lower():
                continue
            for join in select.args.get("joins") or []:
                target, on = join.this, join.args.get("on")
                alias = (target.alias_or_name or "").lower() if isinstance(target, exp.Table) else ""
                if not alias or target.name.lower() != referenced.lower() or on is None or alias in shown_tables:
                    continue
                if any(c.table.lower() == column.table.lower() and c.name.lower() == key.lower()
                       for c in on.find_all(exp.Column)):
                    found.append(f"the answer {SHOWS_KEY} {column.sql()} of table {referenced}, which it joins as "
                                 f"{target.alias_or_name} but shows none of its columns: show the ones that name it")
    return list(dict.fromkeys(found))
