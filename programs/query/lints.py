"""Advice on a query that is valid but probably not what was meant, one rule each (:mod:`~.rules`): ``SELECT *``,
``LIMIT`` without ``ORDER BY``, and joins that pair every row with every row. Warnings never invalidate a query."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.optimizer.scope import walk_in_scope

from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.names import written

if TYPE_CHECKING:
    from text2sql_dspy.programs.query.rules import Query

__all__ = ["cartesian_join", "limit_without_order", "select_star"]


def select_star(query: Query) -> list[Finding]:
    """A warning when the answer's own SELECT (any arm of a top-level set operation) selects ``*`` or ``t.*``."""
    outer = query.tree.unnest() if isinstance(query.tree, exp.Subquery) else query.tree
    for head in outer.find_all(exp.Select):
        if _outermost(head, outer) and any(
            isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            for e in head.expressions
        ):
            return [Finding(kind=Kind.SELECT_STAR, message="selects *: list only the columns the question asks for")]
    return []


def limit_without_order(query: Query) -> list[Finding]:
    """A warning when a query or set operation has LIMIT and no ORDER BY (an arm of a set operation aside)."""
    for node in query.tree.find_all(exp.Select, exp.SetOperation):
        if node.args.get("limit") and not node.args.get("order"):
            if isinstance(node, exp.Select) and isinstance(node.parent, exp.SetOperation):
                continue
            message = "LIMIT without ORDER BY: which rows come back is arbitrary"
            return [Finding(kind=Kind.LIMIT_WITHOUT_ORDER, message=message)]
    return []


def cartesian_join(query: Query) -> list[Finding]:
    """One warning per SELECT that joins a source with neither ON/USING nor a WHERE condition linking it."""
    return distinct(f for select in query.tree.find_all(exp.Select) if (f := _cartesian(select, query.sql)))


def _cartesian(select: exp.Select, sql: str) -> Finding | None:
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
    message = (
        f"cartesian join: {shown} {verb} joined without ON/USING and no WHERE condition links "
        f"{'it' if len(unlinked) == 1 else 'them'} (every row pairs with every row): add a join condition"
    )
    return Finding(kind=Kind.CARTESIAN_JOIN, message=message, where=", ".join(unlinked))


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
