"""Literals a query compares with a column that does not hold them: ``state = 'VA'`` where the column says 'Virginia'.

:func:`missing_values` walks each query level (sqlglot's scopes), resolves the column of every
``column = 'text'``, ``column IN ('a', 'b')`` and ``column LIKE 'text'`` without a wildcard to its stored
table, and asks the :class:`~.values.ValueIndex` whether that column holds the literal. Only columns the
index holds whole are judged, so a finding is a fact about the data, not a guess. :func:`literal_findings`
gives their messages.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.catalog.values import ValueIndex
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct

__all__ = ["MISSING_VALUE", "literal_findings", "missing_values"]

MISSING_VALUE = "is not a value of"  # the words every finding carries, for the agents to recognise


def literal_findings(tree: exp.Expr, catalog: Catalog, index: ValueIndex) -> list[str]:
    """The messages of :func:`missing_values`."""
    return [finding.message for finding in missing_values(tree, catalog, index)]


def missing_values(tree: exp.Expr, catalog: Catalog, index: ValueIndex) -> list[Finding]:
    """One finding per literal that a fully indexed column does not hold, naming the nearest stored values."""
    found = []
    for scope in traverse_scope(tree):
        for column, literal, any_case in _compared(scope):
            table = _stored_table(column, scope, catalog)
            if table is None:
                continue
            name = catalog.table(table).column(column.name).name  # as the catalog spells it
            if not index.knows(table, name) or index.holds(table, name, literal, any_case):
                continue
            nearest = index.nearest(table, name, literal)
            message = f"'{literal}' {MISSING_VALUE} {table}.{name}"
            message += ("; nearest: " + ", ".join(f"'{v}'" for v in nearest)) if nearest else ""
            found.append(Finding(kind=Kind.MISSING_VALUE, message=message, where=f"'{literal}'"))
    return distinct(found)


def _compared(scope: Scope) -> Iterator[tuple[exp.Column, str, bool]]:
    """(column, text literal, whether case is ignored) for each equality test in this query level (LIKE ignores
    case, as on SQLite and MySQL; ILIKE everywhere)."""
    for node in walk_in_scope(scope.expression):
        if isinstance(node, exp.EQ):
            pairs = [(node.this, node.expression), (node.expression, node.this)]
            yield from ((c, lit.this, False) for c, lit in pairs if isinstance(c, exp.Column) and _is_text(lit))
        elif isinstance(node, exp.In) and isinstance(node.this, exp.Column) and not node.args.get("query"):
            yield from ((node.this, lit.this, False) for lit in node.expressions if _is_text(lit))
        elif isinstance(node, exp.Like | exp.ILike) and isinstance(node.this, exp.Column) and _is_text(node.expression):
            if not any(ch in node.expression.this for ch in "%_"):
                yield node.this, node.expression.this, True


def _is_text(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _stored_table(column: exp.Column, scope: Scope, catalog: Catalog) -> str | None:
    """The catalog table ``column`` reads in ``scope``: by its qualifier, else the one stored source having it."""
    stored = {alias.lower(): source.name for alias, source in scope.sources.items() if isinstance(source, exp.Table)}
    if column.table:
        name = stored.get(column.table.lower())
        table = catalog.table(name) if name else None
        return table.name if table is not None and table.column(column.name) is not None else None
    having = [t.name for name in dict.fromkeys(stored.values()) if (t := catalog.table(name)) and t.column(column.name)]
    return having[0] if len(having) == 1 else None
