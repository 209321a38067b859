"""A column named on the wrong table, moved to the table that has it: no model call.

``SELECT T2.superhero_name FROM superhero AS T1 JOIN hero_power AS T2 ...`` names ``superhero_name`` on
``hero_power``, which lacks it. :func:`requalified` rewrites the qualifier when one reading exists:

* exactly one stored table read at that query level has the column: its alias (also for a qualifier that the
  query never defines, ``T2.song_name`` where only ``T1`` and ``T3`` are read); where several have it, a
  qualifier the query never defines that is one table's name, or nearly (``superhero.id`` or ``suphero.id`` where
  ``superhero`` is read as ``s``), takes that table's alias;
* none does, but the named table is a lookup table (one column besides its key) referenced by a key whose role
  is the column's name (``T2.eye_colour`` on ``colour``, joined by ``eye_colour_id``): that one column;
* none does, but exactly one table joined by a declared key to the named one has it
  (``T2.power_name`` on ``hero_power``, whose ``power_id`` references ``superpower``): that table is
  joined along the key, and the column named on it; failing that, exactly one table reached through one
  junction table (``T1.power_name`` on ``superhero``, through ``hero_power``): both are joined.

A column spelled with other case or underscores (``pet_type`` for ``PetType``, ``T2.reactorType`` for
``reactor_type``) that no table read there has as written takes the one spelling that table (else the one
table read at that level) has.

An unqualified column that several tables read there have, where the query joins them all on it by equality
(``SELECT user_id FROM users u JOIN blocks b ON b.user_id = u.user_id``), is given to the first: every reading
gives the same value.

An aggregate in a subquery of a WHERE or ON that reads only an enclosing query's columns
(``WHERE T2.balance > (SELECT AVG(T1.balance) FROM savings)``, ``T1`` read outside) belongs, for SQLite, to the
enclosing query, where no aggregate is allowed: each such column that exactly one table of the subquery has is
given to that table.

A table the catalog lacks but whose name is the role of a foreign key read in the query (``JOIN eye_colour
ON T1.eye_colour_id = eye_colour.id``, where ``superhero.eye_colour_id`` references ``colour``) becomes the
referenced table, under the name the query gave it (``JOIN colour AS eye_colour``), when exactly one such key exists.

Anything else is left as written, for the validator to report.
"""

from __future__ import annotations

import sqlglot
from rapidfuzz import fuzz
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from text2sql_dspy.programs.catalog.catalog import Catalog, Table

__all__ = ["requalified"]

NEAR_NAME = 85  # rapidfuzz ratio at which an undefined qualifier names a table read under an alias


def requalified(sql: str, catalog: Catalog, dialect: str = "sqlite") -> str:
    """``sql`` with each wrongly qualified column requalified where one reading exists; else ``sql`` unchanged."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        if tree is None:
            return sql
        changed = _role_tables(tree, catalog)
        changed = _requalify(tree, catalog) or changed
        changed = _respell(tree, catalog) or changed
        changed = _disambiguate(tree, catalog) or changed
        changed = _own_aggregates(tree, catalog) or changed
        return tree.sql(dialect=dialect) if changed else sql
    except (SqlglotError, RecursionError, ValueError):
        return sql


def _role_tables(tree: exp.Expr, catalog: Catalog) -> bool:
    """Rename each unknown table called after a foreign key's role (``eye_colour`` for ``eye_colour_id``) of a table
    the query reads to the table that key references, aliased by the name written; whether any was renamed."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    tables = list(tree.find_all(exp.Table))
    read = [t for node in tables if (t := catalog.table(node.name)) is not None]
    changed = False
    for node in tables:
        name = node.name.lower()
        if not name or node.args.get("db") or name in ctes or catalog.table(node.name) is not None:
            continue
        roles = _roles(name)
        referenced = {ref.lower() for t in read for column, ref, _ in t.foreign_keys if column.lower() in roles}
        if len(referenced) != 1 or (target := catalog.table(referenced.pop())) is None:
            continue
        alias = node.alias or node.name
        node.set("this", exp.to_identifier(target.name))
        node.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        changed = True
    return changed


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
            if undefined and len(owners) > 1:  # 'superhero.id' where superhero is read as s: the table it names
                owners = [alias for alias in owners if _names(tables[alias], qualifier)] or owners
            if len(owners) == 1:
                column.set("table", exp.to_identifier(spelled[owners[0]]))
                changed = True
            elif not owners and not undefined and (label := _role_label(column.name, table, tables.values(), scope)):
                column.set("this", exp.to_identifier(label))
                changed = True
            elif (not owners and not undefined and None not in tables.values()
                  and isinstance(scope.expression, exp.Select)):
                for alias, joined in _join_owner(scope.expression, column, table, catalog, set(tables)):
                    tables[alias.lower()] = joined
                    spelled[alias.lower()] = alias
                    changed = True
    return changed


def _names(table: Table, qualifier: str) -> bool:
    """Whether ``qualifier`` is ``table``'s name, or spelled nearly so ('suphero' for ``superhero``)."""
    return fuzz.ratio(table.name.lower(), qualifier) >= NEAR_NAME


def _disambiguate(tree: exp.Expr, catalog: Catalog) -> bool:
    """Qualify each unqualified column that several stored tables of its query level have, where the query joins all
    of them on that column by equality (``user_id`` in ``users u JOIN blocks b ON b.user_id = u.user_id``): every
    reading gives the same value, so the first table read takes it; whether any was qualified."""
    changed = False
    for scope in traverse_scope(tree):
        if not isinstance(scope.expression, exp.Select) or not all(
                isinstance(s, exp.Table) for s in scope.sources.values()):
            continue
        tables = {alias: catalog.table(source.name) for alias, source in scope.sources.items()}
        linked = {frozenset((c.this.table.lower(), c.expression.table.lower()))
                  for c in scope.expression.find_all(exp.EQ)
                  if isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column)
                  and c.this.name.lower() == c.expression.name.lower() and c.this.table and c.expression.table}
        for column in scope.columns:
            if column.table:
                continue
            owners = [alias for alias, t in tables.items() if t is not None and t.column(column.name) is not None]
            pairs = {frozenset((a.lower(), b.lower())) for a in owners for b in owners if a != b}
            if len(owners) >= 2 and pairs <= linked:
                column.set("table", exp.to_identifier(owners[0]))
                changed = True
    return changed


def _own_aggregates(tree: exp.Expr, catalog: Catalog) -> bool:
    """Give each subquery's aggregate that reads only enclosing queries' columns, in a WHERE or ON, the subquery's
    own table that has them; whether any was moved."""
    changed = False
    for scope in traverse_scope(tree):
        select = scope.expression
        if (scope.parent is None or not isinstance(select, exp.Select)
                or select.find_ancestor(exp.Where, exp.Join) is None):
            continue
        own = {alias: catalog.table(source.name) for alias, source in scope.sources.items()
               if isinstance(source, exp.Table)}
        here = {alias.lower() for alias in scope.sources}
        for aggregate in select.find_all(exp.AggFunc):
            columns = list(aggregate.find_all(exp.Column))
            if aggregate.parent_select is not select or not columns or any(
                    not c.table or c.table.lower() in here for c in columns):
                continue
            moves = [(c, [a for a, t in own.items() if t is not None and t.column(c.name) is not None])
                     for c in columns]
            if all(len(owners) == 1 for _, owners in moves):
                for column, owners in moves:
                    column.set("table", exp.to_identifier(owners[0]))
                changed = True
    return changed


def _respell(tree: exp.Expr, catalog: Catalog) -> bool:
    """Give each column that no table read has as written the one column it spells with other case or
    underscores (:func:`_folded`): on its own table, else on the one table read at its level; whether any changed."""
    read = [t for node in tree.find_all(exp.Table) if (t := catalog.table(node.name)) is not None]
    changed = False
    for scope in traverse_scope(tree):
        if not all(isinstance(source, exp.Table) for source in scope.sources.values()):
            continue
        tables = {alias: catalog.table(source.name) for alias, source in scope.sources.items()}
        if None in tables.values() or not isinstance(scope.expression, exp.Select):
            continue  # a table the catalog lacks may have the column as written
        aliases = {e.alias.lower() for e in scope.expression.expressions if isinstance(e, exp.Alias)}
        for column in scope.columns:
            if any(t.column(column.name) is not None for t in read):
                continue  # as written somewhere: an enclosing query's column, or another rule's to move
            if not column.table and column.name.lower() in aliases:
                continue  # the select's own name for an expression
            key = _folded(column.name)
            found = [(alias, c.name) for alias, t in tables.items() for c in t.columns if _folded(c.name) == key]
            found = [f for f in found if f[0].lower() == column.table.lower()] or found
            if len(found) == 1:
                alias, name = found[0]
                column.set("this", exp.to_identifier(name, quoted=name != name.lower()))
                if column.table:
                    column.set("table", exp.to_identifier(alias))
                changed = True
    return changed


def _folded(name: str) -> str:
    return name.lower().replace("_", "").replace(" ", "")


def _role_label(name: str, table: Table, read: object, scope: Scope) -> str | None:
    """The one column of lookup table ``table`` besides its key, where a table ``read`` refers to it by a key whose
    role is ``name`` (``eye_colour_id`` for ``eye_colour``) and the query names that key; else None."""
    roles = _roles(name) & {c.name.lower() for c in scope.columns}
    if not any(fk.lower() in roles and ref.lower() == table.name.lower()
               for t in read if t is not None for fk, ref, _ in t.foreign_keys):
        return None
    keys = {c.lower() for c in table.primary_key} | {fk.lower() for fk, _, _ in table.foreign_keys}
    rest = [c.name for c in table.columns if c.name.lower() not in keys]
    return rest[0] if len(rest) == 1 else None


def _roles(name: str) -> set[str]:
    """The key column names whose role ``name`` is: ``eye_colour`` for ``eye_colour_id`` (lower-cased)."""
    return {name.lower() + "_id", name.lower() + "id"}


def _join_owner(select: exp.Select, column: exp.Column, table: Table, catalog: Catalog,
                taken: set[str]) -> list[tuple[str, Table]]:
    """Join the one table linked to ``table`` by a declared key that has ``column`` (else the one reached through a
    junction table): the new aliases and their tables, in join order; none when no single path exists."""
    owns = lambda name: (t := catalog.table(name)) is not None and t.column(column.name) is not None  # noqa: E731
    paths = [[link] for link in _links(table, catalog) if owns(link[1])]
    if not paths:
        paths = [[first, second] for first in _links(table, catalog) if (middle := catalog.table(first[1])) is not None
                 and middle is not table for second in _links(middle, catalog)
                 if second[1].lower() != table.name.lower() and owns(second[1])]
    if len(paths) != 1:
        return []
    joined, previous = [], column.table
    for mine, other, theirs in paths[0]:
        alias = _new_alias(other, taken | {a.lower() for a, _ in joined}, column.table)
        select.join(exp.to_table(other).as_(alias), on=exp.EQ(this=exp.column(mine, previous),
                                                              expression=exp.column(theirs, alias)),
                    join_type="INNER", copy=False)
        joined.append((alias, catalog.table(other)))
        previous = alias
    column.set("table", exp.to_identifier(previous))
    return joined


def _links(table: Table, catalog: Catalog) -> list[tuple[str, str, str]]:
    """(column of ``table``, other table, its column) for each declared key between ``table`` and another table."""
    links = [(fk, ref_table, ref_col) for fk, ref_table, ref_col in table.foreign_keys]  # table.fk -> ref.col
    links += [(ref_col, t.name, fk) for t, fk, ref_col in catalog.referring(table)]  # other.fk -> table.ref_col
    return links


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
