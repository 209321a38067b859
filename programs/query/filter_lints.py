"""Lints of a query's filters, one rule each (the validator's ``RULES``): a column compared with a text literal.

- :func:`unasked_filter`: ``city = 'Ramsey'`` where neither the literal nor the column is named by any word of the
  question or its hint: a filter copied from a sample, or guessed, that narrows the answer.
- :func:`name_as_key`: ``link_to_major = 'Business'``: a name compared with a key column, where the table it
  references (or another) holds the name as a value; join that table and filter on its column.
- :func:`month_name_date`: ``event_date LIKE '%October%'`` on a column of ISO dates, which holds no month names.

The words helpers (:func:`words_of`, :func:`name_words`, :func:`named`) compare a question's words with names and
values whatever their case, number or light suffix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from rapidfuzz import fuzz
from sqlglot import exp

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.catalog.values import ValueIndex, normalise
from text2sql_dspy.programs.catalog.words import plural_and_singular, stem
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.lints import Query, conjuncts, resolve, sources

__all__ = ["month_name_date", "name_as_key", "name_words", "named", "referenced", "text_tests", "unasked_filter",
           "words_of"]

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH = re.compile(r"\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
                   r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b", re.IGNORECASE)
YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
NUMBER = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$")
KEY_NAME = re.compile(r"(id|_ref|_key)$", re.IGNORECASE)
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
FLAGS = frozenset({"yes", "no", "true", "false"})  # a flag's value: the question says what it means in its own words
NEAR_WORD = 85.0  # rapidfuzz's fuzz.ratio: one letter in nine


def words_of(text: str) -> set[str]:
    """The case-folded words of ``text``, accents aside."""
    return set(normalise(text).split())


def name_words(name: str) -> list[str]:
    """The words of a schema name of three letters or more: ``link_to_major`` and ``linkToMajor`` give link, major."""
    return [w for w in normalise(CAMEL.sub(" ", name)).split() if w.isalpha() and len(w) >= 3]


def named(word: str, asked: set[str]) -> bool:
    """Whether ``word`` is among the words ``asked``: in its plural or singular, by its light stem, by a shared start
    of four letters or more that is all but the last two letters of the shorter ('Italy', "Italian"), as the start of
    an asked word (a name's abbreviation: ``enr``, "enrolled"), or spelled within one letter in nine ('activitor',
    "activator")."""
    if any(form in asked for form in plural_and_singular(word)) or stem(word) in {stem(w) for w in asked}:
        return True
    return any(_shared_start(word, w) >= max(4, min(len(word), len(w)) - 2) or w.startswith(word) or (
        min(len(word), len(w)) >= 5 and fuzz.ratio(word, w) >= NEAR_WORD) for w in asked)


def _shared_start(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def text_tests(select: exp.Select,
               clauses: Iterable[exp.Expr | None]) -> Iterator[tuple[exp.Expr, exp.Column, list[str]]]:
    """``(condition, column, text literals)`` for each top-level conjunct of ``clauses`` that compares a column of
    ``select`` with text: ``column = 'x'`` (either way round) or ``column IN ('x', 'y')``."""
    for clause in clauses:
        for condition in conjuncts(clause):
            inner = condition.this if isinstance(condition, exp.Paren) else condition
            if inner.parent_select is not select:
                continue
            if isinstance(inner, exp.EQ):
                for column, value in ((inner.this, inner.expression), (inner.expression, inner.this)):
                    if isinstance(column, exp.Column) and _is_text(value):
                        yield condition, column, [value.this]
            elif isinstance(inner, exp.In) and isinstance(inner.this, exp.Column) and not inner.args.get("query"):
                values = inner.expressions
                if values and all(_is_text(v) for v in values):
                    yield condition, inner.this, [v.this for v in values]


def _is_text(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _quoted(literal: str, dialect: str) -> str:
    return exp.Literal.string(literal).sql(dialect=dialect)


def unasked_filter(query: Query) -> list[Finding]:
    """A WHERE conjunct ``column = 'text'`` (or ``IN`` of text) where no word of any literal (three letters or more)
    and no word of the column's name is a word of the question or its hint, the literal is no abbreviation of the
    question's words, and the query it follows up on does not filter on it (words compared by :func:`named`).
    Literals without such words (codes, numbers, dates) and flags (yes, no, true, false) are not judged. Nothing
    without a question."""
    if not query.question:
        return []
    asked = words_of(f"{query.question} {query.hint}")
    before = query.previous.casefold()
    found = []
    for select in query.tree.find_all(exp.Select):
        for condition, column, values in text_tests(select, [select.args.get("where")]):
            words = [[w for w in words_of(v) if w.isalpha() and len(w) >= 3] for v in values]
            if not all(words) or any(ISO_DATE.match(v) or NUMBER.match(v) or v.strip().lower() in FLAGS
                                     for v in values):
                continue
            if any(named(w, asked) for w in [*(w for ws in words for w in ws), *name_words(column.name)]):
                continue
            if any(_initials(v) & asked or (before and v.casefold() in before) for v in values):
                continue
            shown = condition.sql(dialect=query.dialect)
            message = f"filters {shown}, which the question does not ask for: leave the filter out"
            found.append(Finding(kind=Kind.UNASKED_FILTER, message=message, where=_quoted(values[0], query.dialect)))
    return distinct(found)


def _initials(value: str) -> set[str]:
    """What ``value`` abbreviates to, with and without its short words: 'United States' gives 'us'."""
    words = normalise(value).split()
    return {i for i in ("".join(w[0] for w in words), "".join(w[0] for w in words if len(w) > 3)) if len(i) >= 2}


def name_as_key(query: Query) -> list[Finding]:
    """A text literal (not a number, nor an id with digits) compared (``=``/``IN``, in WHERE or ON) with a key column
    that holds ids (integers, or samples with digits): a foreign key, a primary key, or a column named like one.
    With a value index, only where a column holds the literal: of the referenced table first, else of any table;
    the message names that column. Without one, only for a foreign key, naming the table it references."""
    index = query.values() if query.values is not None else None
    found = []
    for select in query.tree.find_all(exp.Select):
        tables = sources(select, query.catalog)
        joins = [j.args.get("on") for j in select.args.get("joins") or []]
        for _, column, values in text_tests(select, [select.args.get("where"), *joins]):
            resolved = resolve(column, tables)
            if resolved is None:
                continue
            source, own = resolved
            for literal in values:
                message = _name_as_key(literal, source.table, own, query.catalog, index)
                if message:
                    found.append(Finding(kind=Kind.NAME_AS_KEY, message=message,
                                         where=_quoted(literal, query.dialect)))
    return distinct(found)


def _name_as_key(literal: str, table: Table, own: Column, catalog: Catalog, index: ValueIndex | None) -> str:
    """The finding's message for ``own = literal``, or "" when it is no name compared with a key."""
    if NUMBER.match(literal) or (any(ch.isdigit() for ch in literal) and " " not in literal.strip()):
        return ""
    if not (own.references or own.primary_key or KEY_NAME.search(own.name)):
        return ""
    target = referenced(own, catalog)
    keys = [own] if target is None else [own, target[1]]
    if not all(_holds_ids(c) for c in keys) or any(literal.casefold() == str(s).casefold() for c in keys
                                                   for s in c.samples):
        return ""
    said = f"'{literal}' is compared with the key {table.name}.{own.name}"
    if index is None:
        return f"{said}, which holds ids: join {target[0].name} and filter on the column that names it" if (
            target) else ""
    first = (target[0] if target is not None else table).name.lower()
    holders = [(c.table, c.column) for c in index.columns if index.holds(c.table, c.column, literal, True)]
    if not holders:
        return ""
    where, column = min(holders, key=lambda h: h[0].lower() != first)  # the referenced table's first
    if where.lower() == table.name.lower():
        return f"{said}; it is a value of {where}.{column}: filter on {column}"
    return f"{said}; it is a value of {where}.{column}: join {where} and filter on {column}"


def referenced(column: Column, catalog: Catalog) -> tuple[Table, Column] | None:
    """The table and column a foreign key references (its one-column primary key where it names none)."""
    if not column.references:
        return None
    name, key = column.references.rsplit(".", 1)
    table = catalog.table(name)
    if table is None:
        return None
    own = table.column(key) or (table.column(table.primary_key[0]) if len(table.primary_key) == 1 else None)
    return (table, own) if own is not None else None


def _holds_ids(column: Column) -> bool:
    """Whether ``column`` holds ids rather than names: integers, samples each with a digit, or (unsampled) a name
    like a key's."""
    if column.stores_integer:
        return True
    if column.samples:
        return all(isinstance(s, int | float) or any(ch.isdigit() for ch in str(s)) for s in column.samples)
    return bool(KEY_NAME.search(column.name)) or column.name.lower() == "id"


def month_name_date(query: Query) -> list[Finding]:
    """``column LIKE '%October%'`` (any English month name or abbreviation, any case) where the column holds ISO
    dates: its samples all start ``YYYY-MM-DD``, or (unsampled) its declared type is a date or time type."""
    found = []
    for select in query.tree.find_all(exp.Select):
        tables = sources(select, query.catalog)
        for like in select.find_all(exp.Like, exp.ILike):
            if like.parent_select is not select or not isinstance(like.this, exp.Column) or not _is_text(
                    like.expression):
                continue
            pattern = like.expression.this
            month = MONTH.search(pattern.replace("%", " ").replace("_", " "))
            resolved = resolve(like.this, tables)
            example = _iso_example(resolved[1]) if resolved is not None else None
            if month is None or example is None:
                continue
            message = _month_message(resolved[1].name, like.this.sql(dialect=query.dialect), example, pattern,
                                     MONTHS.index(month.group(1)[:3].lower()) + 1, query.dialect)
            found.append(Finding(kind=Kind.MONTH_NAME_DATE, message=message, where=like.sql(dialect=query.dialect)))
    return distinct(found)


def _iso_example(column: Column) -> str | None:
    """A sample of ``column`` when every sample is an ISO date, "" when it has none but a date type, else None."""
    if column.samples:
        texts = [s for s in column.samples if isinstance(s, str)]
        return texts[0] if len(texts) == len(column.samples) and all(ISO_DATE.match(s) for s in texts) else None
    try:
        return "" if exp.DataType.build(column.type).is_type(*exp.DataType.TEMPORAL_TYPES) else None
    except Exception:  # a type sqlglot cannot read is no date type
        return None


def _month_message(name: str, shown: str, example: str, pattern: str, month: int, dialect: str) -> str:
    year = YEAR.search(pattern)
    if year:
        strftime = f"strftime('%Y-%m', {shown}) = '{year.group(1)}-{month:02d}'"
        like = f"{shown} LIKE '{year.group(1)}-{month:02d}-%'"
    else:
        strftime = f"strftime('%m', {shown}) = '{month:02d}'"
        like = f"{shown} LIKE '____-{month:02d}-%'"
    holds = f"{name} holds ISO dates" + (f" ('{example}')" if example else "")
    return f"{holds}: match the month with " + (f"{strftime} (or {like})" if dialect == "sqlite" else like)
