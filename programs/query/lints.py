"""Advice on a query that is valid but probably not what was meant, one rule each (:mod:`~.rules`): ``SELECT *``,
``LIMIT`` without ``ORDER BY``, joins that pair every row with every row, and a subquery that selects the enclosing
query's column. Warnings never invalidate a query."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.catalog.values import ValueIndex
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.names import written

__all__ = ["Query", "SHOWS_KEY", "Source", "asks_for_keys", "cartesian_join", "conjuncts", "is_key", "key_findings",
           "keys_shown", "limit_without_order", "outer_column", "resolve", "select_star", "sources"]


@dataclass(frozen=True)
class Query:
    """What the rules read about one query: built for one validation."""

    tree: exp.Expr  # the one statement, its names normalized (:func:`~.names.normalize_names`)
    sql: str  # the cleaned text ``tree`` was parsed from
    catalog: Catalog
    schema: CatalogSchema  # ``catalog`` as sqlglot's schema
    dialect: str = "sqlite"
    values: Callable[[], ValueIndex | None] | None = None  # the database's value index, when it has one
    question: str = ""  # what the query should answer; "" when unknown
    previous: str = ""  # the query of the conversation's turn it follows up on; "" when none
    hint: str = ""  # what the user said the question's terms mean (BIRD's evidence); "" when none

    @cached_property
    def scopes(self) -> list[Scope]:
        """sqlglot's scopes of ``tree`` (``traverse_scope``), built once; raises as ``traverse_scope`` does."""
        return traverse_scope(self.tree)


@dataclass(frozen=True)
class Source:
    """A stored table read by one SELECT, under its alias (lower-cased)."""

    alias: str
    table: Table
    node: exp.Table


def sources(select: exp.Select, catalog: Catalog) -> dict[str, Source]:
    """The stored tables ``select`` reads directly (FROM and JOINs), by lower-cased alias."""
    found = {}
    for target in _read(select):
        if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier):
            table = catalog.table(target.name)
            if table is not None:
                found[(target.alias_or_name or target.name).lower()] = Source((target.alias_or_name or "").lower(),
                                                                             table, target)
    return found


def _read(select: exp.Select) -> list[exp.Expr]:
    """What ``select`` reads in FROM and its JOINs."""
    return [node.this for node in [select.args.get("from_"), *(select.args.get("joins") or [])] if node is not None]


def resolve(column: exp.Column, found: dict[str, Source]) -> tuple[Source, Column] | None:
    """The source and catalog column ``column`` reads: by its qualifier, else the one source that has it."""
    if column.table:
        source = found.get(column.table.lower())
        own = source.table.column(column.name) if source is not None else None
        return (source, own) if own is not None else None
    owners = [(s, c) for s in found.values() if (c := s.table.column(column.name)) is not None]
    return owners[0] if len(owners) == 1 else None


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    """``condition`` split at its top-level ANDs."""
    if condition is None:
        return []
    if isinstance(condition, exp.Where | exp.Having | exp.Paren):
        return conjuncts(condition.this)
    if isinstance(condition, exp.And):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]


def is_key(column: Column, table: Table) -> bool:
    """Whether ``column`` alone identifies a row of ``table``: its one-column primary key, or a unique column."""
    return column.unique or (column.primary_key and len(table.primary_key) == 1)


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
        on = join.args.get("on")
        if (on is not None and not isinstance(on, exp.Boolean)) or join.args.get("using") or (
                join.method or "").upper() == "NATURAL":
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


def outer_column(query: Query) -> list[Finding]:
    """A subquery that selects a column none of its own tables has, where a table of an enclosing query has it:
    the column reads the enclosing row, so ``shop_id IN (SELECT shop_id FROM member)`` holds for every shop that
    member has rows for. Subqueries of ``EXISTS``, and those reading a derived table or an unknown one, are skipped."""
    found = []
    for select in query.tree.find_all(exp.Select):
        enclosing = _enclosing(select)
        own = sources(select, query.catalog)
        if not enclosing or isinstance(select.parent, exp.Exists) or len(own) != len(_read(select)):
            continue
        outer: dict[str, Source] = {}
        for parent in enclosing:
            outer = sources(parent, query.catalog) | outer  # the nearest query's alias wins
        for projected in select.expressions:
            column = projected.unalias()
            if not isinstance(column, exp.Column) or isinstance(column.this, exp.Star):
                continue
            if column.table:
                reads_outer = column.table.lower() not in own and column.table.lower() in outer
            else:
                reads_outer = (not any(s.table.column(column.name) for s in own.values())
                               and any(s.table.column(column.name) for s in outer.values()))
            if reads_outer:
                tables = list(dict.fromkeys(s.table.name for s in own.values()))
                shown = written(column.this, query.sql)
                have = "does not have" if len(tables) == 1 else "do not have"
                message = (f"the subquery selects {shown}, which {', '.join(tables)} {have}: it reads the enclosing "
                           "query's row, so comparing with it holds for every row; select the subquery's own column"
                           + _referenced_in(resolve(column, outer), own))
                found.append(Finding(kind=Kind.OUTER_COLUMN, message=message, where=column.sql()))
    return distinct(found)


def _referenced_in(outer: tuple[Source, Column] | None, own: dict[str, Source]) -> str:
    """The fix to name, ``" (t.id, which u.t_id references)"``, where the enclosing query's column is a foreign key to a
    table of ``own``; "" otherwise."""
    if outer is None or not outer[1].references:
        return ""
    table, key = outer[1].references.rsplit(".", 1)
    target = next((s for s in own.values() if s.table.name.lower() == table.lower()), None)
    if target is None:
        return ""
    return f" ({target.alias or target.table.name}.{key}, which {outer[0].table.name}.{outer[1].name} references)"


def _enclosing(select: exp.Select) -> list[exp.Select]:
    """The SELECTs whose row ``select`` can read, nearest first: none past a derived table or a CTE."""
    found, node = [], select
    while (parent := node.parent) is not None and not isinstance(parent, exp.From | exp.Join | exp.CTE | exp.With):
        if isinstance(parent, exp.Select):
            found.append(parent)
        node = parent
    return found


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


SHOWS_KEY = "shows the key"  # the words every key warning carries, for the agents to recognise
_ASKS_FOR_KEYS = re.compile(r"\b(ids?|identifiers?|numbers?|codes?|keys?)\b", re.IGNORECASE)


def asks_for_keys(question: str) -> bool:
    """Whether ``question`` asks for an id, number, code or key."""
    return _ASKS_FOR_KEYS.search(question) is not None


def keys_shown(sql: str, catalog: Catalog, question: str, dialect: str = "sqlite") -> list[str]:
    """The messages of :func:`key_findings` of ``sql`` when ``question`` asks for no id; else none."""
    if asks_for_keys(question):
        return []
    try:
        return [finding.message for finding in key_findings(sqlglot.parse_one(sql, read=dialect), catalog, sql)]
    except (SqlglotError, RecursionError, ValueError):
        return []


def key_findings(tree: exp.Expr, catalog: Catalog, sql: str = "") -> list[Finding]:
    """The outermost SELECT's columns that are a foreign key holding integers into a table with text of its own,
    while the answer shows none of that table's columns: ``SELECT eye_colour_id FROM superhero``, or ``SELECT
    T1.skin_colour_id ... JOIN colour AS T2 ON T1.skin_colour_id = T2.id``, answers with a number where
    ``colour.colour`` holds the words. ``sql``, the text ``tree`` was parsed from, shows each column as written."""
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
                message = (f"the answer {SHOWS_KEY} {table.name}.{own.name}, a number pointing into {target.name}: "
                           f"show the {target.name} columns that name it")
                found.append(Finding(kind=Kind.SHOWS_KEY, message=message, where=_as_written(column, sql)))
    return distinct(found)


def _as_written(column: exp.Column, sql: str) -> str:
    """``column`` as ``sql`` writes it (``T1.skin_colour_id``)."""
    name = written(column.this, sql)
    return f"{written(column.args.get('table'), sql)}.{name}" if column.table else name


def _only(stored: dict, column: str) -> str | None:
    """The alias of the one stored table read here that has ``column``; None if none or several."""
    owners = [alias for alias, table in stored.items() if table.column(column) is not None]
    return owners[0] if len(owners) == 1 else None
