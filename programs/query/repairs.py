"""Mechanical repairs of a query the validator refused (issue 81): the failures that have one fix a program can make.

When no draft validates, the program has nothing to answer with, and the small model, told the fix, writes the same bad
name again. :func:`repairs` gives a refused query's repaired readings, likeliest first. It decides from the findings'
kinds and their ``where`` (the name as written), and reads the rest off the parsed query against the catalog:

* **other table**: a column its table lacks and another table of the same FROM has (one owner is
  :func:`~.requalify.requalified`'s, before validation: here are the two-owner cases and what a derived table hid);
* **near name**: a column its table lacks where the table has one without its digit suffix (``order_id1`` ->
  ``order_id``) or one edit away, unless the edit changes a number (``line3`` -> ``line1``) or a word the schema
  uses (``years`` -> ``year`` where a table has ``years``): that name means something else;
* **table as column**: a table's name, alone or with words around it (``T1.failed_login_attempts``), where its rows
  refer to the named table by a declared key: they are counted, joined along the key (a bare name: a correlated
  ``COUNT(*)``); the other words (``failed``) are not applied, and the change says so;
* **ambiguous**: an unqualified column that several tables of the FROM have: the table a declared key or a join's
  filter gives it first, then each other table;
* **missing join**: a column no table of the FROM has, that a table it does not read has, one declared key away from
  the table it was asked of (``o.status`` on organizations: ``subscriptions.status``, joined on its
  ``organization_id``): that table joined along the key and its column read, a lookup (one row per row) first;
* **dialect** (:func:`~.dialect_repair.dialect_readings`): a query its engine refuses for its dialect, read in
  another one and written in its own by sqlglot.

Several fixes for one name are several readings (up to ``cap``); none is chosen silently. Nothing here validates or
runs a query: the caller checks each reading like any draft.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

import sqlglot
from rapidfuzz.distance import Levenshtein
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from text2sql_dspy.programs.catalog.catalog import Catalog, Table
from text2sql_dspy.programs.query.dialect_repair import DIALECT, Repair, dialect_readings
from text2sql_dspy.programs.query.findings import Finding, Kind

__all__ = ["AMBIGUOUS", "JOIN", "KINDS", "NEAR", "OTHER", "TABLE", "repairs"]

NEAR, OTHER, TABLE, AMBIGUOUS, JOIN = "near name", "other table", "table as column", "ambiguous", "missing join"
KINDS = (DIALECT, NEAR, OTHER, TABLE, AMBIGUOUS, JOIN)  # every kind of repair, as :attr:`Repair.kind` names it


def repairs(sql: str, findings: list[Finding], catalog: Catalog, dialect: str, *, cap: int = 3) -> list[Repair]:
    """The repaired readings of ``sql``, refused with ``findings``, likeliest first: at most ``cap``, each distinct and
    different from ``sql``. Names are mended where every unknown or ambiguous column has a fix; a syntax or database
    error is read in other dialects (:func:`~.dialect_repair.dialect_readings`)."""
    kinds = {finding.kind for finding in findings}
    found: list[Repair] = []
    try:  # a repair is advice: one that fails says nothing
        if kinds & {Kind.UNKNOWN_COLUMN, Kind.AMBIGUOUS_COLUMN}:
            wrong = {f.where.lower() for f in findings if f.kind in (Kind.UNKNOWN_COLUMN, Kind.AMBIGUOUS_COLUMN)}
            found += _name_readings(sql, wrong, catalog, dialect, cap)
        if kinds & {Kind.SYNTAX, Kind.DATABASE_ERROR}:
            found += dialect_readings(sql, dialect)
    except Exception:  # noqa: BLE001 (sqlglot's scopes and generators refuse some exotic shapes)
        pass
    seen, distinct = {sql}, []
    for repair in found:
        if repair.sql not in seen:
            seen.add(repair.sql)
            distinct.append(repair)
    return distinct[:cap]


# --------------------------------------------------------------------------- names

Action = Callable[[exp.Select, list[exp.Column]], None]  # mends a copy: its query level and the columns to mend
Fix = tuple[int, str, str, Action]  # rank (0 likeliest), kind, the change in words, what to do


def _name_readings(sql: str, wrong: set[str], catalog: Catalog, dialect: str, cap: int) -> list[Repair]:
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        words = _words_in(name for t in catalog.tables for name in (t.name, *t.column_names))
        problems = list(_problems(tree, wrong, catalog, words))
        if not problems or not all(fixes for *_, fixes in problems):
            return []  # a name with no fix: no reading would validate
        choices = sorted(itertools.product(*(fixes[:cap] for *_, fixes in problems)),
                         key=lambda choice: sum(fix[0] for fix in choice))  # the likeliest fixes first
        readings = []
        for choice in choices[:cap]:
            copy = tree.copy()
            selects, columns = list(copy.find_all(exp.Select)), list(copy.find_all(exp.Column))
            for (select, indices, _), (_, _, _, action) in zip(problems, choice):
                action(selects[select], [columns[i] for i in indices])
            readings.append(Repair(copy.sql(dialect=dialect), tuple(f[2] for f in choice), choice[0][1]))
        return readings
    except (SqlglotError, RecursionError, ValueError):
        return []


def _problems(tree: exp.Expr, wrong: set[str], catalog: Catalog, words: frozenset[str]) -> Iterator[tuple]:
    """(index of the query level, indices of its columns so named, their fixes) for each wrong name of each level."""
    selects = {id(s): i for i, s in enumerate(tree.find_all(exp.Select))}
    columns = {id(c): i for i, c in enumerate(tree.find_all(exp.Column))}
    for scope in traverse_scope(tree):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
        named: dict[tuple[str, str], list[exp.Column]] = {}
        for column in select.find_all(exp.Column):  # this level's own, ORDER BY a selected column's name included
            shown = f"{column.table}.{column.name}" if column.table else column.name
            if (shown.lower() in wrong and column.find_ancestor(exp.Select) is select
                    and (column.table or column.name.lower() not in aliases)):
                named.setdefault((column.table.lower(), column.name.lower()), []).append(column)
        read = [t.alias_or_name.lower() for t in _read(select)]
        for found in named.values():
            # two sources under one name (``Reviewer AS r JOIN Rating AS r``): which one ``r.x`` means, no one knows
            doubled = len(set(read)) < len(read)
            qualifier, name = found[0].table, found[0].name  # as first written
            fixes = [] if doubled else _fixes(scope, qualifier, name, catalog, words, _movable(found, select))
            if fixes is not None:
                yield selects[id(select)], [columns[id(c)] for c in found], fixes


def _fixes(scope: Scope, qualifier: str, name: str, catalog: Catalog, words: frozenset[str],
           movable: set[str]) -> list[Fix] | None:
    """The fixes of column ``name`` (on ``qualifier``) at ``scope``'s level, likeliest first, onto the tables
    ``movable`` names (lower-case aliases) besides its own; None where it is right."""
    shown = f"{qualifier}.{name}" if qualifier else name
    sources = [(a, t) for a, s in scope.sources.items() if isinstance(s, exp.Table) and (t := catalog.table(s.name))]
    key, others = name.lower(), [(a, t) for a, t in sources if a.lower() in movable - {qualifier.lower()}]
    if qualifier:
        own = _source(scope, qualifier, catalog)
        if own is None or own[1].column(name) is not None:
            return [] if own is None else None
        moves = [(0, OTHER, a, c.name) for a, t in others if (c := t.column(name))]  # the same name elsewhere
        moves += [(1, NEAR, own[0], c) for c in _near(key, own[1], words)]
        moves += [(2, NEAR, a, c) for a, t in others for c in _near(key, t, words)]
        fixes = [(rank, kind, f"`{shown}` → `{a}.{c}`", _renamed(a, c)) for rank, kind, a, c in moves]
        rows = _rows(scope, shown, key, [own], catalog)
        return fixes + rows + ([] if fixes or rows else _joins(scope, shown, key, [own], catalog))
    owners = [(a, t) for a, t in sources if t.column(name) is not None]
    if len(owners) > 1:
        owners = [(a, t) for a, t in owners if a.lower() in movable]
        keyed = _keyed(scope, key, owners, catalog)  # the join says whose it is, else each is a reading
        return [(0, AMBIGUOUS, f"`{name}` → `{a}.{name}`", _renamed(a, name))
                for a, _ in owners if keyed in (None, a)]
    if owners or len(sources) < len(scope.sources):
        return None if owners else []  # one owner: right; a derived table's columns: not judged here
    qualify = len(sources) > 1
    fixes = [(1, NEAR, f"`{name}` → `{f'{a}.' if qualify else ''}{c}`", _renamed(a if qualify else "", c))
             for a, t in others for c in _near(key, t, words)]
    rows = _rows(scope, shown, key, sources, catalog)
    return fixes + rows + ([] if fixes or rows else _joins(scope, shown, key, sources, catalog))


def _read(select: exp.Select) -> list[exp.Expr]:
    """What ``select`` reads, in order: its FROM, then each join's table."""
    first = select.args.get("from_") or select.args.get("from")
    return ([first.this] if first is not None else []) + [j.this for j in select.args.get("joins") or []]


def _movable(columns: list[exp.Column], select: exp.Select) -> set[str]:
    """The aliases (lower-case) ``columns`` may move to: not the other side of their equality (``ON T1.x = T1.x``
    joins nothing), and within a join's ON, a table read by then, and none where they are the joined table's."""
    read = [t.alias_or_name.lower() for t in _read(select)]
    movable = set(read)
    for column in columns:
        if isinstance(column.parent, exp.EQ):
            movable -= {o.table.lower() for o in column.parent.iter_expressions() if isinstance(o, exp.Column)}
        join = column.find_ancestor(exp.Join, exp.Select)
        if isinstance(join, exp.Join) and join.parent is select:
            at = 1 + next(i for i, j in enumerate(select.args["joins"]) if j is join)
            movable &= set() if column.table.lower() == read[at] else set(read[: at + 1])
    return movable


def _source(scope: Scope | None, qualifier: str, catalog: Catalog) -> tuple[str, Table] | None:
    """(alias, table) that ``qualifier`` names at ``scope``'s level or an enclosing one; None for no catalog table."""
    while scope is not None:
        for alias, source in scope.sources.items():
            if alias.lower() == qualifier.lower():
                table = catalog.table(source.name) if isinstance(source, exp.Table) else None
                return None if table is None else (alias, table)
        scope = scope.parent
    return None


def _near(name: str, table: Table, words: frozenset[str]) -> list[str]:
    """The columns of ``table`` close to ``name`` (lower-case): ``name`` without its digit suffix, or one edit away
    where the edit changes no number and no word of the schema (``words``)."""
    close = []
    for column in table.column_names:
        other = column.lower()
        if other == name or (other != name.rstrip("0123456789").rstrip("_") and Levenshtein.distance(name, other) != 1):
            continue
        mine, theirs = _words(name), _words(other)
        changed = [(a, b) for a, b in zip(mine, theirs) if a != b] if len(mine) == len(theirs) else []
        if not any((a.isdigit() and b.isdigit()) or a in words for a, b in changed):
            close.append(column)
    return close


def _words(name: str) -> list[str]:
    """``name``'s words: split at underscores, spaces and between letters and digits (``line_3`` -> line, 3)."""
    return [w for part in name.lower().replace(" ", "_").split("_") for _, g in itertools.groupby(part, str.isdigit)
            if (w := "".join(g))]


def _words_in(names: Iterable[str]) -> frozenset[str]:
    return frozenset(w for name in names for w in _words(name))


def _renamed(alias: str, column: str) -> Action:
    def rename(select: exp.Select, columns: list[exp.Column]) -> None:
        for node in columns:
            node.set("this", exp.to_identifier(column))
            if alias:
                node.set("table", exp.to_identifier(alias))
    return rename


def _keyed(scope: Scope, name: str, owners: list[tuple[str, Table]], catalog: Catalog) -> str | None:
    """The owner of unqualified ``name`` that a join gives it: the table whose column a declared key ties to the other
    side of an equality with it, else the joined table whose ON filters it; None when no join says."""
    for join in scope.expression.args.get("joins") or []:
        on = join.args.get("on")
        for eq in on.find_all(exp.EQ) if on is not None else []:
            for mine, other in ((eq.this, eq.expression), (eq.expression, eq.this)):
                if not (isinstance(mine, exp.Column) and not mine.table and mine.name.lower() == name
                        and isinstance(other, exp.Column) and (far := _source(scope, other.table, catalog))):
                    continue
                tied = [a for a, t in owners if _linked(t, name, far[1], other.name.lower())]
                if len(tied) == 1:
                    return tied[0]
        mentioned = on is not None and any(not c.table and c.name.lower() == name for c in on.find_all(exp.Column))
        if mentioned and (joined := join.alias_or_name) in {a for a, _ in owners}:
            return joined
    return None


def _linked(table: Table, column: str, other: Table, other_column: str) -> bool:
    """Whether a declared key ties ``table.column`` and ``other.other_column``, either way."""
    return any(fk.lower() == a and ref.lower() == t2.name.lower() and rc.lower() == b
               for t1, a, t2, b in ((table, column, other, other_column), (other, other_column, table, column))
               for fk, ref, rc in t1.foreign_keys)


def _rows(scope: Scope, shown: str, name: str, anchors: list[tuple[str, Table]], catalog: Catalog) -> list[Fix]:
    """``name`` read as the table it names (``T1.failed_login_attempts``: ``login_attempts``), joined to an ``anchors``
    table by a declared key: its column of that name read (``degrees`` of ``degrees``), else its rows counted, or
    where one of its rows belongs to each anchor row (the key is its primary key, or the anchor's reference), its one
    column besides its keys read."""
    named = [t for t in catalog.tables if t.name.lower() == name] or sorted(
        (t for t in catalog.tables if name.endswith("_" + t.name.lower()) or name.startswith(t.name.lower() + "_")),
        key=lambda t: -len(t.name))
    read = {s.name.lower() for s in scope.sources.values() if isinstance(s, exp.Table)}
    rows = named[0] if named else None
    extra = [] if rows is None else [w for w in _words(name) if w not in _words(rows.name)]
    if rows is None or rows.name.lower() in read or not _words_in(rows.column_names).isdisjoint(extra):
        return []  # read already, or a column of it (``council_tax_id``): not its rows
    keys = {c.lower() for c in rows.primary_key} | {fk.lower() for fk, _, _ in rows.foreign_keys}
    rest = [c for c in rows.column_names if c.lower() not in keys]
    same = rows.column(name)
    unsaid = f" ('{' '.join(extra)}' not applied)" if extra else ""
    fixes = []
    for alias, anchor in anchors:
        links = [(col, fk, [c.lower() for c in rows.primary_key] == [fk.lower()]) for fk, ref, col in rows.foreign_keys
                 if ref.lower() == anchor.name.lower()]  # (anchor's column, rows' column, one row per anchor row)
        links += [(fk, col, True) for fk, ref, col in anchor.foreign_keys if ref.lower() == rows.name.lower()]
        for mine, theirs, one in links:
            column = same.name if same else rest[0] if one and len(rest) == 1 else None
            if one and column is None:
                continue
            said = f"`{rows.name}.{column}`" if column else f"the {rows.name} rows counted"
            fixes.append((3, TABLE, f"`{shown}` → {said}, joined on {rows.name}.{theirs} = {alias}.{mine}{unsaid}",
                          _joined(rows, theirs, (alias, anchor), mine, column)))
    return fixes


def _join_of(select: exp.Select, table: str, theirs: str, alias: str, mine: str) -> str | None:
    """The alias under which ``select`` joins ``table`` on exactly ``<it>.theirs = alias.mine``, else None."""
    for join in select.args.get("joins") or []:
        on, joined = join.args.get("on"), join.this
        if (isinstance(joined, exp.Table) and joined.name.lower() == table.lower() and isinstance(on, exp.EQ)
                and on.sql().lower() == f"{joined.alias_or_name}.{theirs} = {alias}.{mine}".lower()):
            return joined.alias_or_name
    return None


def _joins(scope: Scope, shown: str, name: str, anchors: list[tuple[str, Table]], catalog: Catalog) -> list[Fix]:
    """Column ``name`` (lower-case) read from a table this level does not read, joined to an ``anchors`` table by a
    declared key: where the anchor refers to it (one row per anchor row) first, then where its rows refer to the
    anchor; never the key it is joined on (that is the anchor's own column), nor for a name a join's ON reads (the new
    join would come after it). Within each, a table whose column's samples hold a literal the query compares the name
    with (``= 'past_due'``) comes first."""
    ons = [join.args["on"] for join in scope.expression.args.get("joins") or [] if join.args.get("on") is not None]
    if any(c.sql().lower() == shown.lower() for on in ons for c in on.find_all(exp.Column)):
        return []
    read = {s.name.lower() for s in scope.sources.values() if isinstance(s, exp.Table)}
    compared = _compared(scope.expression, shown.lower())
    found: list[tuple[bool, bool, Fix]] = []  # (a lookup, its samples hold a compared literal, the fix)
    for table in catalog.tables:
        column = table.column(name)
        if column is None or table.name.lower() in read:
            continue
        held = not compared.isdisjoint(str(sample).lower() for sample in column.samples)
        for alias, anchor in anchors:
            links = [(fk, col, True) for fk, ref, col in anchor.foreign_keys if ref.lower() == table.name.lower()]
            links += [(col, fk, False) for fk, ref, col in table.foreign_keys if ref.lower() == anchor.name.lower()]
            found += [(lookup, held, (3, JOIN, f"`{shown}` → `{table.name}.{column.name}`, joined on "
                                      f"{table.name}.{theirs} = {alias}.{mine}",
                                      _joined(table, theirs, (alias, anchor), mine, column.name)))
                      for mine, theirs, lookup in links if theirs.lower() != name]
    return [fix for *_, fix in sorted(found, key=lambda f: (not f[0], not f[1]))]  # stable: the catalog's order


def _compared(select: exp.Select, shown: str) -> set[str]:
    """The literals (lower-case) ``select`` compares the column it writes as ``shown`` with (``=``, ``<>``, ``IN``)."""
    literals = set()
    for node in select.find_all(exp.EQ, exp.NEQ, exp.In):
        sides = [node.this, *node.expressions] if isinstance(node, exp.In) else [node.this, node.expression]
        if any(isinstance(c, exp.Column) and c.sql().lower() == shown for c in sides):
            literals |= {c.this.lower() for c in sides if isinstance(c, exp.Literal)}
    return literals


def _joined(rows: Table, theirs: str, anchor: tuple[str, Table], mine: str, column: str | None) -> Action:
    """Read ``column`` of ``rows`` joined on ``rows.theirs = alias.mine`` (``anchor``: the alias and its table), or with
    no ``column``, count its rows: joined where an aggregate counts or sums the name, else by a correlated ``COUNT(*)``
    (named as the name was). The anchor's unqualified columns that ``rows`` has too are qualified: not ambiguous."""
    alias = anchor[0]

    def act(select: exp.Select, columns: list[exp.Column]) -> None:
        def wrapper(node: exp.Column) -> exp.Expr:  # COUNT(x) or COUNT(DISTINCT x): the aggregate
            return node.parent.parent if isinstance(node.parent, exp.Distinct) else node.parent

        counted = [node for node in columns if column is None and isinstance(wrapper(node), exp.Count | exp.Sum)]
        if column is not None and (same := _join_of(select, rows.name, theirs, alias, mine)):
            joined = same  # another name read from the same join: the join once
        elif column is not None or counted:
            taken = {t.alias_or_name.lower() for t in select.root().find_all(exp.Table)}
            styled = alias[:1].upper() == "T" and alias[1:].isdigit()  # T1, T2: the next free T<n>, else the name
            joined = next(n for i in itertools.count(1) if (n := f"T{i}" if styled else rows.name if i == 1
                                                           else f"{rows.name}_{i}").lower() not in taken)
            table = exp.to_table(rows.name) if joined == rows.name else exp.to_table(rows.name).as_(joined)
            on = exp.EQ(this=exp.column(theirs, joined), expression=exp.column(mine, alias))
            for node in select.find_all(exp.Column):  # before the join: its ON is qualified
                if (not node.table and node.find_ancestor(exp.Select) is select and rows.column(node.name)
                        and anchor[1].column(node.name) and not any(node is c for c in columns)):
                    node.set("table", exp.to_identifier(alias))
            select.join(table, on=on, copy=False)
        key = rows.primary_key
        for node in columns:
            if column is not None:
                node.replace(exp.column(column, joined))
            elif any(node is c for c in counted):
                wrapper(node).replace(exp.Count(this=exp.column(key[0], joined) if len(key) == 1 else exp.Star()))
            else:
                where = exp.EQ(this=exp.column(theirs, rows.name), expression=exp.column(mine, alias))
                count = exp.select(exp.Count(this=exp.Star())).from_(rows.name).where(where).subquery()
                node.replace(exp.alias_(count, node.name) if node.parent is select else count)
    return act
