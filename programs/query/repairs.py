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
from collections.abc import Callable, Iterator
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

__all__ = ["SOURCES", "Repair", "dialect_readings", "dialect_repair", "repairs"]

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
    if kinds & {Kind.UNKNOWN_COLUMN, Kind.AMBIGUOUS_COLUMN}:
        wrong = {f.where.lower() for f in findings if f.kind in (Kind.UNKNOWN_COLUMN, Kind.AMBIGUOUS_COLUMN)}
        found += _name_readings(sql, wrong, catalog, dialect, cap)
    if kinds & {Kind.SYNTAX, Kind.DATABASE_ERROR}:
        found += dialect_readings(sql, dialect)
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
        problems = list(_problems(tree, wrong, catalog, _words_of(catalog)))
        if not problems or not all(fixes for *_, fixes in problems):
            return []  # a name with no fix: no reading would validate
        choices = sorted(itertools.product(*(fixes[:cap] for *_, fixes in problems)), key=lambda c: sum(f[0] for f in c))
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
        for column in scope.columns:
            shown = f"{column.table}.{column.name}" if column.table else column.name
            if (shown.lower() in wrong and column.find_ancestor(exp.Select) is select
                    and (column.table or column.name.lower() not in aliases)):
                named.setdefault((column.table, column.name), []).append(column)
        for (qualifier, name), found in named.items():
            fixes = _fixes(scope, qualifier, name, catalog, words)
            if fixes is not None:
                yield selects[id(select)], [columns[id(c)] for c in found], fixes


def _fixes(scope: Scope, qualifier: str, name: str, catalog: Catalog, words: frozenset[str]) -> list[Fix] | None:
    """The fixes of column ``name`` (on ``qualifier``) at ``scope``'s level, likeliest first; None where it is right."""
    shown = f"{qualifier}.{name}" if qualifier else name
    sources = [(alias, t) for alias, s in scope.sources.items() if isinstance(s, exp.Table) and (t := catalog.table(s.name))]
    key = name.lower()
    if qualifier:
        own = _source(scope, qualifier, catalog)
        if own is None or own[1].column(name) is not None:
            return [] if own is None else None
        others = [(a, t) for a, t in sources if a.lower() != qualifier.lower()]
        fixes = [(0, OTHER, f"`{shown}` → `{a}.{c.name}`", _renamed(a, c.name)) for a, t in others if (c := t.column(name))]
        fixes += [(1, NEAR, f"`{shown}` → `{own[0]}.{c}`", _renamed(own[0], c)) for c in _near(key, own[1], words)]
        fixes += [(2, NEAR, f"`{shown}` → `{a}.{c}`", _renamed(a, c)) for a, t in others for c in _near(key, t, words)]
        return fixes + _counted(scope, shown, key, [own], catalog)
    owners = [(a, t) for a, t in sources if t.column(name) is not None]
    if len(owners) > 1:
        first = _keyed(scope, key, owners, catalog)
        ordered = sorted(owners, key=lambda o: o[0] != first)
        return [(int(a != first), AMBIGUOUS, f"`{name}` → `{a}.{name}`", _renamed(a, name)) for a, _ in ordered]
    if owners or len(sources) < len(scope.sources):
        return None if owners else []  # one owner: right; a derived table's columns: not judged here
    fixes = [(1, NEAR, f"`{name}` → `{f'{a}.' if len(sources) > 1 else ''}{c}`", _renamed(a if len(sources) > 1 else "", c))
             for a, t in sources for c in _near(key, t, words)]
    return fixes + _counted(scope, shown, key, sources, catalog)


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


def _words_of(catalog: Catalog) -> frozenset[str]:
    return frozenset(w for t in catalog.tables for name in (t.name, *t.column_names) for w in _words(name))


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


def _counted(scope: Scope, shown: str, name: str, anchors: list[tuple[str, Table]], catalog: Catalog) -> list[Fix]:
    """``name`` read as the rows of the table it names that refer to an ``anchors`` table by a declared key: counted,
    joined along the key where an aggregate counts or sums it, else by a correlated ``COUNT(*)``."""
    named = [t for t in catalog.tables if t.name.lower() == name] or sorted(
        (t for t in catalog.tables if name.endswith("_" + t.name.lower()) or name.startswith(t.name.lower() + "_")),
        key=lambda t: -len(t.name))
    read = {s.name.lower() for s in scope.sources.values() if isinstance(s, exp.Table)}
    if not named or named[0].name.lower() in read:
        return []
    rows = named[0]
    extra = [w for w in _words(name) if w not in _words(rows.name)]
    unsaid = f" ('{' '.join(extra)}' not applied)" if extra else ""
    return [(3, TABLE, f"`{shown}` → the {rows.name} rows counted, joined on {rows.name}.{fk} = {alias}.{ref_col}"
             + unsaid, _count(rows, fk, alias, ref_col))
            for alias, anchor in anchors for fk, ref, ref_col in rows.foreign_keys if ref.lower() == anchor.name.lower()]


def _count(rows: Table, fk: str, alias: str, ref_col: str) -> Action:
    def count(select: exp.Select, columns: list[exp.Column]) -> None:
        aggregates = []
        for node in columns:
            outer = node.parent.parent if isinstance(node.parent, exp.Distinct) else node.parent
            if isinstance(outer, exp.Count | exp.Sum):
                aggregates.append(outer)
            else:
                where = exp.EQ(this=exp.column(fk, rows.name), expression=exp.column(ref_col, alias))
                node.replace(exp.select(exp.Count(this=exp.Star())).from_(rows.name).where(where).subquery())
        if aggregates:
            taken = {t.alias_or_name.lower() for t in select.root().find_all(exp.Table)}
            joined = next(n for i in itertools.count(1) if (n := rows.name if i == 1 else f"{rows.name}_{i}") not in taken)
            on = exp.EQ(this=exp.column(fk, joined), expression=exp.column(ref_col, alias))
            select.join(exp.to_table(rows.name).as_(joined), on=on, copy=False)
            key = rows.primary_key
            for aggregate in aggregates:
                aggregate.replace(exp.Count(this=exp.column(key[0], joined) if len(key) == 1 else exp.Star()))
    return count


# --------------------------------------------------------------------------- dialect

_LACKS = {"sqlite": (exp.Extract, exp.Hour, exp.Minute, exp.Second, exp.Concat)}  # SQLite has none (before 3.44:
# concat); sqlglot writes them as they are
_STRFTIME = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S", "DOW": "%w",
             "DAYOFWEEK": "%w", "DOY": "%j", "DAYOFYEAR": "%j", "EPOCH": "%s"}  # fields STRFTIME gives as EXTRACT does
_UNITS = frozenset({*exp.TimeUnit.UNABBREVIATED_UNIT_NAME, *exp.TimeUnit.UNABBREVIATED_UNIT_NAME.values(), *_STRFTIME,
                    *(u + "S" for u in exp.TimeUnit.UNABBREVIATED_UNIT_NAME.values()), "YY", "YYYY", "QQ", "MM", "DD",
                    "DY", "WK", "WW", "DW", "HH", "MI", "N", "SS", "MCS", "ISODOW", "ISOWEEK", "WEEKDAY"})
_NAMED = (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER)
_LEAVES = (exp.Identifier, exp.Literal, exp.Var, exp.DataType, exp.Null, exp.Boolean)


def dialect_repair(sql: str, dialect: str) -> Repair | None:
    """The likeliest reading of :func:`dialect_readings`, or None."""
    return next(iter(dialect_readings(sql, dialect)), None)


def dialect_readings(sql: str, dialect: str) -> list[Repair]:
    """``sql`` as ``dialect`` and then each of :data:`SOURCES` read it, written for ``dialect`` by sqlglot
    (``unsupported_level=RAISE``), each different text once. Where ``dialect`` parses it, only what it cannot run
    changes: a function sqlglot does not know there or the engine lacks, one sqlglot writes otherwise there, one whose
    arguments its parser drops. A reading sqlglot cannot write without an unsupported warning, or that loses a name
    or literal of ``sql``, is refused."""
    target = _parsed(sql, dialect)
    readings: dict[str, Repair] = {}
    for source in dict.fromkeys((dialect, *SOURCES)):
        read = target if source == dialect else _parsed(sql, source)
        notes: list[str] = []
        tree = None if read is None else read.copy() if target is None else _graft(target.copy(), read, source, dialect, notes)
        try:
            written = None if tree is None else _native(tree, dialect, notes).sql(dialect, unsupported_level=ErrorLevel.RAISE)
        except (SqlglotError, ValueError):
            continue
        keywords = _keywords(source) | _keywords(dialect)
        if written is None or written in readings or _same(written, sql, dialect) or not (
                _named(sql, source, keywords) <= _named(written, dialect, keywords)):
            continue
        said = f"read as {_SHOWN.get(source, source)} and " if source != dialect else ""
        readings[written] = Repair(written, tuple(dict.fromkeys(notes)) or (f"{said}written for {_SHOWN.get(dialect, dialect)}",), DIALECT)
    return list(readings.values())


def _parsed(sql: str, dialect: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return None


def _graft(t: exp.Expr, r: exp.Expr, source: str, dialect: str, notes: list[str]) -> exp.Expr | None:
    """``t`` (``dialect``'s reading) with each part ``dialect`` cannot run replaced by ``r``'s (``source``'s reading of
    the same text); None where they differ elsewhere."""
    said = f" read as {_SHOWN.get(source, source)} and" if source != dialect else ""
    if isinstance(t, (exp.Anonymous, *_LACKS.get(dialect, ()))) or (isinstance(t, exp.Func | exp.Binary) and _otherwise(t, dialect)):
        if t != r or _otherwise(t, dialect):
            notes.append(f"{_label(t if isinstance(t, exp.Anonymous) else r, source)}{said} written for {_SHOWN.get(dialect, dialect)}")
        return r.copy()
    if not _same_shape(t, r):  # a function whose arguments ``dialect``'s parser drops (MySQL's one-argument ISNULL)
        if isinstance(t, exp.Condition) and _leaves(t) < _leaves(r):
            notes.append(f"{_label(r, source)}{said} written for {_SHOWN.get(dialect, dialect)}")
            return r.copy()
        return None
    for key, value in list(t.args.items()):
        if value is None:
            continue
        mine, theirs = (value, r.args.get(key) or []) if isinstance(value, list) else ([value], [r.args.get(key)])
        grafted = [_graft(a, b, source, dialect, notes) if isinstance(a, exp.Expr) else a for a, b in zip(mine, theirs)]
        if any(g is None for g in grafted):
            return None
        if any(g is not a for g, a in zip(grafted, mine)):
            t.set(key, grafted if isinstance(value, list) else grafted[0])
    return t


def _same_shape(t: exp.Expr, r: exp.Expr) -> bool:
    """Same type, same plain arguments, the same children in the same places (not compared)."""
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


def _otherwise(node: exp.Expr, dialect: str) -> bool:
    """Whether sqlglot writes ``node`` itself (its children stood in for) otherwise for ``dialect``, or cannot."""
    stand_in = lambda v, i: v.copy() if isinstance(v, _LEAVES) else exp.column(f"_{i}")  # noqa: E731
    args = {k: [stand_in(x, i) for x in v] if isinstance(v, list) else stand_in(v, i) if isinstance(v, exp.Expr) else v
            for i, (k, v) in enumerate(node.args.items())}
    shallow = type(node)(**args)
    try:
        return shallow.sql(dialect, unsupported_level=ErrorLevel.RAISE) != shallow.sql(unsupported_level=ErrorLevel.IGNORE)
    except (SqlglotError, ValueError):
        return True


def _native(tree: exp.Expr, dialect: str, notes: list[str]) -> exp.Expr:
    """``tree`` with what ``dialect``'s engine lacks (:data:`_LACKS`) written with what it has, in place; raises
    :class:`UnsupportedError` where that would change the result (EXTRACT of a field STRFTIME does not give)."""
    if dialect != "sqlite":
        return tree
    for node in list(tree.find_all(exp.Extract, exp.Hour, exp.Minute, exp.Second)):
        unit, value = (node.this.name.upper(), node.expression) if isinstance(node, exp.Extract) else (node.key.upper(), node.this)
        if unit not in _STRFTIME:
            raise UnsupportedError(f"no STRFTIME field for {unit}")
        _note(notes, f"{_label(node, 'sqlite')} written for SQLite")
        field = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_STRFTIME[unit]), value.copy()])
        node.replace(exp.Cast(this=field, to=exp.DataType.build("INTEGER")))
    for node in list(tree.find_all(exp.Concat)):  # NULL as '' where the reading says so (PostgreSQL, SQLite 3.44)
        parts = [p.copy() if isinstance(p, exp.Literal) or not node.args.get("coalesce")
                 else exp.Coalesce(this=p.copy(), expressions=[exp.Literal.string("")]) for p in node.expressions]
        _note(notes, "CONCAT(...) written for SQLite")
        node.replace(reduce(lambda a, b: exp.DPipe(this=a, expression=b), parts))
    return tree


def _note(notes: list[str], note: str) -> None:
    """Add ``note`` unless a note already says what ``note``'s function became."""
    if not any(said.startswith(note.partition(" ")[0]) for said in notes):
        notes.append(note)


def _label(node: exp.Expr, dialect: str) -> str:
    if isinstance(node, exp.Extract):
        return f"EXTRACT({node.this.name.upper()} FROM ...)"
    if isinstance(node, exp.Anonymous):
        return f"{node.name.upper()}(...)"
    if isinstance(node, exp.Func):
        return f"{node.sql(dialect, unsupported_level=ErrorLevel.IGNORE).partition('(')[0][:30]}(...)"
    return node.key.upper()


def _leaves(node: exp.Expr) -> Counter:
    return Counter(str(n.this).lower() for n in node.find_all(exp.Identifier, exp.Literal, exp.Var))


def _tokens(sql: str, dialect: str) -> list:
    try:
        return Dialect.get_or_raise(dialect).tokenize(sql)
    except SqlglotError:
        return []


def _keywords(dialect: str) -> frozenset[str]:
    return frozenset(Dialect.get_or_raise(dialect).tokenizer_class.KEYWORDS)


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
