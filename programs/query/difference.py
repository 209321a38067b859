"""How two readings of a question differ, in words, read off their sqlglot syntax trees: no model call.

``differences("SELECT count(*) FROM plant WHERE status = 'Planned'",
"SELECT count(*) FROM plant WHERE status = 'Under Construction'")`` gives
``(["keeps rows where status = 'Planned'"], ["keeps rows where status = 'Under Construction'"])``:
what each query has that the other lacks.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

__all__ = ["READS", "ROW_FILTER", "changes", "differences", "parts"]

# How a part's words start, by kind (what :func:`parts` writes and the readers of its words look for)
RETURNS, READS, ROW_FILTER, GROUP_FILTER = "returns ", "reads ", "keeps rows where ", "keeps groups where "
FILTERS = (ROW_FILTER, GROUP_FILTER)


def differences(sql_a: str, sql_b: str, dialect: str = "sqlite") -> tuple[list[str], list[str]]:
    """The parts (returned values, tables read, row filters, grouping, order, limit) of each query that the other
    lacks, in words; two empty lists when either does not parse."""
    a, b = parts(sql_a, dialect), parts(sql_b, dialect)
    if not a or not b:
        return [], []
    return [p for p in a if p not in b], [p for p in b if p not in a]


def parts(sql: str, dialect: str = "sqlite") -> list[str]:
    """The outermost query's parts in words, in reading order; [] when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError, RecursionError):
        return []
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return []
    out = [f"{RETURNS}{_sql(e, dialect)}" for e in select.expressions]
    out += [f"{READS}{_sql(t, dialect)}" for t in select.find_all(exp.Table) if t.parent_select is select]
    where = select.args.get("where")
    if where is not None:
        out += [f"{ROW_FILTER}{_sql(c, dialect)}" for c in _conjuncts(where.this)]
    if select.args.get("distinct") is not None:
        out.append("drops repeated rows (DISTINCT)")
    group = select.args.get("group")
    if group is not None:
        out.append("groups by " + ", ".join(_sql(e, dialect) for e in group.expressions))
    having = select.args.get("having")
    if having is not None:
        out += [f"{GROUP_FILTER}{_sql(c, dialect)}" for c in _conjuncts(having.this)]
    order = select.args.get("order")
    if order is not None:
        out.append("sorts by " + ", ".join(_sql(e, dialect) for e in order.expressions))
    limit = select.args.get("limit")
    if limit is not None:
        out.append(f"keeps the first {_sql(limit.expression, dialect)} rows")
    return out


def _conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    return list(condition.flatten()) if isinstance(condition, exp.And) else [condition]


def _sql(node: exp.Expression | None, dialect: str) -> str:
    if node is None:
        return ""
    if isinstance(node, exp.Alias):
        node = node.this
    if isinstance(node, exp.Table):
        return node.name
    unqualified = node.copy().transform(  # T1.name and name read the same in words
        lambda n: exp.column(n.this) if isinstance(n, exp.Column) and isinstance(n.this, exp.Identifier) else n)
    return unqualified.sql(dialect=dialect)


def changes(previous: str, sql: str, dialect: str = "sqlite") -> str:
    """What a follow-up's query keeps and changes of the query it follows up on, in one line: ``kept: year = 2019;
    added: type = 'Meeting'``; "" when either does not parse or nothing is kept (a new question)."""
    before, after = parts(previous, dialect), parts(sql, dialect)
    if not before or not after:
        return ""
    kept = [p for p in before if p in after and p.startswith(FILTERS)]
    added = [p for p in after if p not in before and p.startswith(FILTERS)]
    removed = [p for p in before if p not in after and p.startswith(FILTERS)]
    shows = [p.removeprefix(RETURNS) for p in after if p.startswith(RETURNS)]
    if not kept and not set(before) & set(after):
        return ""
    said = [f"kept: {', '.join(_plain(p) for p in kept)}" if kept else "",
            f"added: {', '.join(_plain(p) for p in added)}" if added else "",
            f"dropped: {', '.join(_plain(p) for p in removed)}" if removed else "",
            f"returns: {', '.join(shows)}" if shows != [p.removeprefix(RETURNS) for p in before
                                                      if p.startswith(RETURNS)] else ""]
    return "; ".join(s for s in said if s)


def _plain(part: str) -> str:
    for lead in FILTERS:
        if part.startswith(lead):
            return part[len(lead):]
    return part
