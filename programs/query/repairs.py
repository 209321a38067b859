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
* **dialect** (:func:`dialect_readings`): a query its engine refuses for its dialect, read in another one and written
  in its own by sqlglot.

Several fixes for one name are several readings (up to ``cap``); none is chosen silently. Nothing here validates or
runs a query: the caller checks each reading like any draft.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import reduce

import sqlglot
from rapidfuzz.distance import Levenshtein
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.tokens import TokenType

from text2sql_dspy.programs.catalog.catalog import Catalog, Table
from text2sql_dspy.programs.db.dialect import DIALECT_NAMES
from text2sql_dspy.programs.query.findings import Finding, Kind

__all__ = ["AMBIGUOUS", "DIALECT", "NEAR", "OTHER", "SOURCES", "TABLE", "Repair", "dialect_readings", "dialect_repair",
           "repairs"]

SOURCES = ("sqlite", "postgres", "mysql", "tsql", "duckdb")  # the dialects a draft may be written in, likeliest first
_SHOWN = {**DIALECT_NAMES, "tsql": "T-SQL"}
DIALECT, NEAR, OTHER, TABLE, AMBIGUOUS = "dialect", "near name", "other table", "table as column", "ambiguous"


@dataclass(frozen=True)
class Repair:
    """One repaired reading of a refused query: its SQL, what changed (for people) and the kind of repair."""

    sql: str
    changes: tuple[str, ...]
    kind: str  # DIALECT, NEAR, OTHER, TABLE or AMBIGUOUS (a reading that mends several names: the first one's)


def repairs(sql: str, findings: list[Finding], catalog: Catalog, dialect: str, *, cap: int = 3) -> list[Repair]:
    """The repaired readings of ``sql``, refused with ``findings``, likeliest first: at most ``cap``, each distinct and
    different from ``sql``. Names are mended where every unknown or ambiguous column has a fix; a syntax or database
    error is read in other dialects (:func:`dialect_readings`)."""
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
        return fixes + _rows(scope, shown, key, [own], catalog)
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
    return fixes + _rows(scope, shown, key, sources, catalog)


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


def _joined(rows: Table, theirs: str, anchor: tuple[str, Table], mine: str, column: str | None) -> Action:
    """Read ``column`` of ``rows`` joined on ``rows.theirs = alias.mine`` (``anchor``: the alias and its table), or with
    no ``column``, count its rows: joined where an aggregate counts or sums the name, else by a correlated ``COUNT(*)``
    (named as the name was). The anchor's unqualified columns that ``rows`` has too are qualified: not ambiguous."""
    alias = anchor[0]

    def act(select: exp.Select, columns: list[exp.Column]) -> None:
        def wrapper(node: exp.Column) -> exp.Expr:  # COUNT(x) or COUNT(DISTINCT x): the aggregate
            return node.parent.parent if isinstance(node.parent, exp.Distinct) else node.parent

        counted = [node for node in columns if column is None and isinstance(wrapper(node), exp.Count | exp.Sum)]
        if column is not None or counted:
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


# --------------------------------------------------------------------------- dialect

_LACKS = {  # what an engine lacks, that sqlglot writes as it is (SQLite before 3.44: CONCAT) or as the engine has it
    "sqlite": (exp.Extract, exp.Hour, exp.Minute, exp.Second, exp.Concat, exp.ILike),
    "mysql": (exp.ILike,),
}
_STRFTIME = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S", "DOW": "%w",
             "DAYOFWEEK": "%w", "DOY": "%j", "DAYOFYEAR": "%j", "EPOCH": "%s"}  # fields STRFTIME gives as EXTRACT does
_UNIT_NAMES = exp.TimeUnit.UNABBREVIATED_UNIT_NAME
_UNITS = frozenset({*_UNIT_NAMES, *_UNIT_NAMES.values(), *(u + "S" for u in _UNIT_NAMES.values()), *_STRFTIME,
                    "YY", "YYYY", "QQ", "MM", "DD", "DY", "WK", "WW", "DW", "HH", "MI", "N", "SS", "MCS", "ISODOW",
                    "ISOWEEK"})  # date parts' names, which dialects write their own ways (T-SQL's dd, 'day')
_NAMED = (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER)


def dialect_repair(sql: str, dialect: str) -> Repair | None:
    """The likeliest reading of :func:`dialect_readings`, or None."""
    return next(iter(dialect_readings(sql, dialect)), None)


def dialect_readings(sql: str, dialect: str) -> list[Repair]:
    """``sql`` as ``dialect`` and then each of :data:`SOURCES` read it, written for ``dialect`` by sqlglot, each
    different text once. Where ``dialect`` parses it, only what its engine cannot run changes: a function sqlglot does
    not know there, or writes as another function there, or whose arguments its parser drops, and what the engine
    lacks (:data:`_LACKS`). A reading sqlglot cannot write without an unsupported warning
    (``unsupported_level=RAISE``), or that loses a name or literal of ``sql``, is refused."""
    target = _parsed(sql, dialect)
    readings: dict[str, Repair] = {}
    for source in dict.fromkeys((dialect, *SOURCES)):
        read = target if source == dialect else _parsed(sql, source)
        notes: list[str] = []
        tree = None if read is None else read.copy() if target is None else _graft(
            target.copy(), read, sql, source, dialect, notes)
        try:
            written = None if tree is None else _native(tree, sql, dialect, notes).sql(
                dialect, unsupported_level=ErrorLevel.RAISE)
        except (SqlglotError, ValueError):
            continue
        if written is None or written in readings or _same(written, sql, dialect) or not _kept(
                sql, read, source, written, dialect):
            continue
        read_as = f"read as {_SHOWN.get(source, source)} and " if source != dialect else ""
        changes = tuple(dict.fromkeys(notes)) or (f"{read_as}written for {_SHOWN.get(dialect, dialect)}",)
        readings[written] = Repair(written, changes, DIALECT)
    return list(readings.values())


def _parsed(sql: str, dialect: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return None


def _graft(t: exp.Expr, r: exp.Expr, sql: str, source: str, dialect: str, notes: list[str]) -> exp.Expr | None:
    """``t`` (``dialect``'s reading of ``sql``) with each part its engine cannot run replaced by ``r``'s
    (``source``'s reading) there; None where the two differ elsewhere."""
    said = f"{' read as ' + _SHOWN.get(source, source) + ' and' if source != dialect else ''} written for " + (
        _SHOWN.get(dialect, dialect))
    otherwise = _otherwise(t, sql, dialect)
    if otherwise or isinstance(t, (exp.Anonymous, *_LACKS.get(dialect, ()))):
        if t != r or not isinstance(t, exp.Anonymous):  # an unknown function read the same: nothing said
            _note(notes, _label(t, sql) + said)
        return r.copy()
    if not _same_shape(t, r):  # a function whose arguments ``dialect``'s parser drops (MySQL's ISNULL(a, b))
        if isinstance(t, exp.Condition) and _leaves(t) < _leaves(r):
            _note(notes, _label(r, sql) + said)
            return r.copy()
        return None
    for key, value in list(t.args.items()):
        if value is None:
            continue
        mine, theirs = (value, r.args.get(key) or []) if isinstance(value, list) else ([value], [r.args.get(key)])
        grafted = [_graft(a, b, sql, source, dialect, notes) if isinstance(a, exp.Expr) else a
                   for a, b in zip(mine, theirs)]
        if any(g is None for g in grafted):
            return None
        if any(g is not a for g, a in zip(grafted, mine)):
            t.set(key, grafted if isinstance(value, list) else grafted[0])
    return t


def _same_shape(t: exp.Expr, r: exp.Expr) -> bool:
    """Same type, the same plain arguments, children in the same places (not compared)."""
    given = lambda e: {k: v for k, v in e.args.items() if v is not None and v is not False and v != []}  # noqa: E731
    mine, theirs = given(t), given(r)
    if type(t) is not type(r) or mine.keys() != theirs.keys():
        return False
    for key, a in mine.items():
        b = theirs[key]
        if isinstance(a, list) or isinstance(b, list):
            if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)):
                return False
        elif isinstance(a, exp.Expr) != isinstance(b, exp.Expr) or (
                not isinstance(a, exp.Expr) and str(a).lower() != str(b).lower()):
            return False
    return True


def _otherwise(node: exp.Expr, sql: str, dialect: str) -> bool:
    """Whether sqlglot writes function ``node`` (its arguments stood in for) for ``dialect`` as another function than
    the one ``sql`` names there (``IFNULL`` as ``COALESCE`` on PostgreSQL), or cannot write it."""
    name = _written(node, sql)
    if not isinstance(node, exp.Func) or not name:
        return False
    def stand_in(value: exp.Expr, i: int) -> exp.Expr:
        return value.copy() if isinstance(value, exp.Identifier | exp.Literal | exp.Var | exp.DataType) else (
            exp.column(f"_{i}"))

    args = {k: [stand_in(x, i) for x in v] if isinstance(v, list) else stand_in(v, i) if isinstance(v, exp.Expr) else v
            for i, (k, v) in enumerate(node.args.items())}
    try:
        out = type(node)(**args).sql(dialect, unsupported_level=ErrorLevel.RAISE).upper()
    except (SqlglotError, ValueError):
        return True
    return out != name.upper() and not out.startswith(name.upper() + "(")


def _written(node: exp.Expr, sql: str) -> str:
    """The name ``sql`` gives function ``node`` ("" where sqlglot kept no position)."""
    start, end = node.meta.get("start"), node.meta.get("end")
    return sql[start:end + 1] if isinstance(start, int) and isinstance(end, int) else ""


def _native(tree: exp.Expr, sql: str, dialect: str, notes: list[str]) -> exp.Expr:
    """``tree`` with what SQLite lacks (:data:`_LACKS`: EXTRACT, CONCAT) written with what it has, in place; raises
    :class:`UnsupportedError` where that would change the result (a field STRFTIME does not give)."""
    if dialect != "sqlite":
        return tree
    for node in list(tree.find_all(exp.Extract, exp.Hour, exp.Minute, exp.Second)):
        unit = node.this.name.upper() if isinstance(node, exp.Extract) else node.key.upper()
        if unit not in _STRFTIME:
            raise UnsupportedError(f"no STRFTIME field for {unit}")
        _note(notes, _label(node, sql) + " written for SQLite")
        value = node.expression if isinstance(node, exp.Extract) else node.this
        field = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_STRFTIME[unit]), value.copy()])
        node.replace(exp.Cast(this=field, to=exp.DataType.build("INTEGER")))
    for node in list(tree.find_all(exp.Concat)):  # NULL read as '' where the reading says so (PostgreSQL, SQLite 3.44)
        parts = [p.copy() if isinstance(p, exp.Literal) or not node.args.get("coalesce")
                 else exp.Coalesce(this=p.copy(), expressions=[exp.Literal.string("")]) for p in node.expressions]
        if parts:
            _note(notes, _label(node, sql) + " written for SQLite")
            node.replace(reduce(lambda a, b: exp.DPipe(this=a, expression=b), parts))
    return tree


def _note(notes: list[str], note: str) -> None:
    """Add ``note`` unless a note already says what became of its function."""
    if not any(said.startswith(note.partition("(")[0]) for said in notes):
        notes.append(note)


def _label(node: exp.Expr, sql: str) -> str:
    if isinstance(node, exp.Extract):
        return f"EXTRACT({node.this.name.upper()} FROM ...)"
    name = _written(node, sql) or (node.name if isinstance(node, exp.Anonymous) else "")
    return f"{name.upper()}(...)" if name else node.key.upper()


def _leaves(node: exp.Expr) -> Counter:
    return Counter(str(n.this).lower() for n in node.find_all(exp.Identifier, exp.Literal, exp.Var))


def _kept(sql: str, read: exp.Expr, source: str, written: str, dialect: str) -> bool:
    """Whether ``written`` keeps every name and literal of ``sql`` (read in ``source``), but the date formats given
    as literals, which another dialect writes in its own way (``'%Y'``: ``'YYYY'``)."""
    keywords = _keywords(source) | _keywords(dialect)
    named = _named(sql, source, keywords)
    for node in read.find_all(exp.Func):
        if isinstance(form := node.args.get("format"), exp.Literal):
            named.pop((TokenType.STRING, form.this.lower()), None)
    return named <= _named(written, dialect, keywords)


def _keywords(dialect: str) -> frozenset[str]:
    return frozenset(Dialect.get_or_raise(dialect).tokenizer_class.KEYWORDS)


def _tokens(sql: str, dialect: str) -> list:
    try:
        return Dialect.get_or_raise(dialect).tokenize(sql)
    except SqlglotError:
        return []


def _named(sql: str, dialect: str, keywords: frozenset[str]) -> Counter:
    """The names (but ``keywords``, functions' names and date parts' units) and literals ``sql`` writes, lower-case."""
    tokens = _tokens(sql, dialect)
    return Counter((t.token_type in (TokenType.STRING, TokenType.NUMBER) and t.token_type, t.text.lower())
                   for t, after in zip(tokens, [*tokens[1:], None])
                   if t.token_type in _NAMED and t.text.upper() not in _UNITS
                   and (t.token_type is not TokenType.VAR or t.text.upper() not in keywords)
                   and not (after is not None and after.token_type is TokenType.L_PAREN))


def _same(a: str, b: str, dialect: str) -> bool:
    """Whether ``a`` and ``b`` are the same query but for spacing, keywords' case and ``AS``."""
    key = lambda sql: [(t.token_type, t.text.lower() if t.token_type in _NAMED else "")  # noqa: E731
                       for t in _tokens(sql, dialect) if t.token_type is not TokenType.ALIAS]
    return key(a) == key(b)
