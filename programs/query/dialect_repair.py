"""Dialect repairs of a refused query (issue 81): the query read in another dialect and written in its own by sqlglot.

A small model writes another engine's SQL (``EXTRACT`` and ``CONCAT`` on SQLite, ``ISNULL(a, b)`` on MySQL). For a
query its engine refuses with a syntax or database error, :func:`dialect_readings` gives its readings, likeliest first:
only what the engine cannot run is rewritten, and a reading that loses a name or a literal is refused.
:func:`dialect_repair` is the likeliest one. Each is a :class:`Repair`, the repaired reading that
:func:`~.repairs.repairs` gives too; nothing here validates or runs a query.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import reduce

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError
from sqlglot.tokens import TokenType

from text2sql_dspy.programs.db.dialect import DIALECT_NAMES

__all__ = ["DIALECT", "SOURCES", "Repair", "dialect_readings", "dialect_repair"]

SOURCES = ("sqlite", "postgres", "mysql", "tsql", "duckdb")  # the dialects a draft may be written in, likeliest first
_SHOWN = {**DIALECT_NAMES, "tsql": "T-SQL"}
DIALECT = "dialect"


@dataclass(frozen=True)
class Repair:
    """One repaired reading of a refused query: its SQL, what changed (for people) and the kind of repair."""

    sql: str
    changes: tuple[str, ...]
    kind: str  # one of repairs.KINDS (a reading that mends several names: the first one's)


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
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.upper() in _NOW and not node.expressions:
            _note(notes, f"{node.name.upper()}() written for SQLite")
            node.replace(exp.CurrentTimestamp())
    for node in list(tree.find_all(exp.Add, exp.Sub, exp.DateAdd, exp.DateSub)):
        if (moved := _shifted(node)) is not None:
            said = "INTERVAL" if isinstance(node, exp.Add | exp.Sub) else _label(node, sql)
            _note(notes, f"{said} written for SQLite")
            node.replace(moved)
    for node in list(tree.find_all(exp.Extract, exp.Quarter, exp.Hour, exp.Minute, exp.Second)):
        unit = node.this.name.upper() if isinstance(node, exp.Extract) else node.key.upper()
        if unit == "QUARTER":  # months 1-3: 1, ..., 10-12: 4
            _note(notes, _label(node, sql) + " written for SQLite")
            month = exp.Cast(this=exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string("%m"), (
                node.expression if isinstance(node, exp.Extract) else node.this).copy()]),
                to=exp.DataType.build("INTEGER"))
            node.replace(exp.Paren(this=exp.Div(this=exp.Paren(this=exp.Add(
                this=month, expression=exp.Literal.number(2))), expression=exp.Literal.number(3), typed=True)))
            continue
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


def _shifted(node: exp.Expr) -> exp.Expr | None:
    """Date arithmetic (``x - INTERVAL 2 HOUR``, ``DATE_ADD(x, INTERVAL 7 DAY)``, T-SQL's ``DATEADD``) as SQLite's
    ``DATETIME(x, '-2 hours')`` (``DATE`` on a date: ``CURRENT_DATE``, ``DATE(...)``); None where ``node`` is no such
    arithmetic. Raises :class:`UnsupportedError` for a unit SQLite's modifiers lack."""
    start, by = node.this, node.expression
    if isinstance(node, exp.Add | exp.Sub) and not isinstance(by, exp.Interval):
        return None
    unit = node.args.get("unit") if not isinstance(by, exp.Interval) else by.args.get("unit")
    amount = by.this if isinstance(by, exp.Interval) else by
    negative = isinstance(node, exp.Sub | exp.DateSub)
    if unit is None and isinstance(amount, exp.Literal) and amount.is_string:  # INTERVAL '2 hours', '1 year 2 months'
        words = amount.this.split()
        if len(words) % 2 or not words:
            raise UnsupportedError(f"no SQLite modifier for INTERVAL '{amount.this}'")
        parts = [(exp.Literal.number(words[i]), words[i + 1]) for i in range(0, len(words), 2)]
    elif unit is not None:
        parts = [(amount, unit.name)]
    else:
        return None
    modifiers = [_modifier(value, name, negative) for value, name in parts]
    dated = isinstance(start, exp.CurrentDate | exp.Date | exp.TsOrDsToDate)
    return exp.Anonymous(this="DATE" if dated else "DATETIME", expressions=[start.copy(), *modifiers])


_MODIFIER_UNITS = {"YEAR": ("years", 1), "QUARTER": ("months", 3), "MONTH": ("months", 1), "WEEK": ("days", 7),
                   "DAY": ("days", 1), "HOUR": ("hours", 1), "MINUTE": ("minutes", 1), "SECOND": ("seconds", 1)}
_NOW = frozenset({"NOW", "GETDATE", "SYSDATE", "SYSDATETIME", "LOCALTIMESTAMP"})  # SQLite's CURRENT_TIMESTAMP


def _modifier(value: exp.Expr, unit: str, negative: bool) -> exp.Expr:
    """SQLite's modifier for ``value`` ``unit`` s (``'-2 hours'``); where ``value`` is no number, one built in SQL."""
    name = unit.upper().rstrip("S") if unit.upper() not in ("S", "SS") else "SECOND"
    name = {"YY": "YEAR", "YYYY": "YEAR", "MM": "MONTH", "DD": "DAY", "D": "DAY", "HH": "HOUR", "MI": "MINUTE",
            "N": "MINUTE", "WK": "WEEK", "WW": "WEEK", "QQ": "QUARTER"}.get(name, name)
    if name not in _MODIFIER_UNITS:
        raise UnsupportedError(f"no SQLite modifier for {unit}")
    word, times = _MODIFIER_UNITS[name]
    sign = -1 if negative else 1
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
        value, sign = value.this, -sign
    if isinstance(value, exp.Literal):
        try:
            number = float(value.this) * sign * times
        except ValueError as error:
            raise UnsupportedError(f"no number in INTERVAL '{value.this}'") from error
        return exp.Literal.string(f"{number:+g} {word}")
    scaled = value.copy() if times == 1 else exp.Mul(this=exp.Paren(this=value.copy()),
                                                     expression=exp.Literal.number(times))
    signed = exp.Neg(this=exp.Paren(this=scaled)) if sign < 0 else scaled
    return exp.DPipe(this=signed, expression=exp.Literal.string(f" {word}"))


def _note(notes: list[str], note: str) -> None:
    """Add ``note`` unless a note already says what became of its function (of ``EXTRACT``, of its field)."""
    function = note.partition(" FROM")[0] if note.startswith("EXTRACT(") else note.partition("(")[0]
    if not any(said.startswith(function) for said in notes):
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
    for node in read.find_all(exp.Interval, exp.DateAdd, exp.DateSub):  # an amount: a SQLite modifier's now
        for amount in ([node.this] if isinstance(node, exp.Interval) else [node.expression, node.expression.this]):
            if isinstance(amount, exp.Literal):  # INTERVAL 2 HOUR, '2' HOUR, '2 hours'
                for key in [k for k in named if k[0] and k[1].split()[:1] == [amount.this.lower()]]:
                    named.pop(key)
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
