"""An answer that shows a key (a number pointing into another table) where the question asks for no id: a warning,
which needs the question (:func:`asks_for_keys`); :func:`key_findings` on a tree, :func:`keys_shown` on a text."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import walk_in_scope

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.names import written

__all__ = ["SHOWS_KEY", "asks_for_keys", "key_findings", "keys_shown"]

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
