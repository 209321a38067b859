"""A query less one filter: ``WHERE e.type = 'Meeting' AND e.city = 'Ramsey'`` without ``e.city = 'Ramsey'``.

:func:`without_filter` removes, from the WHERE of each SELECT, the top-level conjuncts that compare a column with a
given text literal (``=``, ``IN`` of literals, ``LIKE``); it is a transform only, and judges nothing: which filter is
unasked is the lints' to say (:func:`~.filter_lints.unasked_filter`).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.query.lints import conjuncts

__all__ = ["literal_of", "without_filter"]


def literal_of(where: str, dialect: str = "sqlite") -> str:
    """The text literal a finding's ``where`` names (``'Ramsey'`` or ``city = 'Ramsey'``): its first string literal,
    else the text as it is."""
    try:
        found = next((v for v in sqlglot.parse_one(where, read=dialect).find_all(exp.Literal) if v.is_string), None)
    except (SqlglotError, RecursionError, ValueError):
        found = None
    return found.this if found is not None else where.strip()


def without_filter(sql: str, literal: str, dialect: str = "sqlite") -> str | None:
    """``sql`` without the WHERE conjuncts that test a column against the text ``literal`` (compared without case);
    None when it has none, or cannot be parsed."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return None
    wanted = literal.lower()
    changed = False
    for select in list(tree.find_all(exp.Select)):
        where = select.args.get("where")
        if where is None:
            continue
        kept = [c for c in conjuncts(where) if not _tests(c, wanted)]
        if len(kept) == len(conjuncts(where)):
            continue
        changed = True
        if kept:
            select.set("where", exp.Where(this=exp.and_(*(c.copy() for c in kept))))
        else:
            select.set("where", None)
    return tree.sql(dialect=dialect) if changed else None


def _tests(condition: exp.Expr, literal: str) -> bool:
    """Whether ``condition`` compares a column with ``literal`` alone (and nothing else)."""
    inner = condition.this if isinstance(condition, exp.Paren) else condition
    if isinstance(inner, exp.EQ | exp.Like | exp.ILike):
        sides = (inner.this, inner.expression)
        return any(isinstance(c, exp.Column) for c in sides) and any(
            isinstance(v, exp.Literal) and v.is_string and v.this.strip("%").lower() == literal for v in sides)
    if isinstance(inner, exp.In) and isinstance(inner.this, exp.Column) and not inner.args.get("query"):
        values = [v for v in inner.expressions if isinstance(v, exp.Literal)]
        return len(values) == 1 and values[0].this.lower() == literal
    return False
