"""Lints that read the query beside its question (and, in a conversation, the query it follows up on), one rule
each (the validator's ``RULES``). Each says nothing without a question.

- :func:`both_values`: "both X and Y" asked, but one row must hold X or Y (``IN ('X', 'Y')``, ``= 'X' OR = 'Y'``).
- :func:`unasked_limit`: a LIMIT where the question asks for no top, first, single or counted rows.
- :func:`sum_of_key`: ``SUM`` over an id column, where the question asks how many.
- :func:`sum_for_count`: "how many" asked, but the answer adds up a measure the question does not name
  (``SUM(CASE WHEN remaining < 0 THEN amount ELSE 0 END)`` for "how many budgets had exceeded?").
- :func:`value_not_row`: "which ... the most" asked, but the answer is ``MAX(...)``/``MIN(...)`` alone.
- :func:`opaque_id`: a literal compared with a column of opaque ids (:attr:`~..catalog.catalog.Column.opaque`)
  that the question does not quote: copied from a sample, not asked for.
- :func:`dropped_filter`: a follow-up whose query drops a filter of the query it continues, where the question
  does not say to widen it.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.catalog.values import normalise
from text2sql_dspy.programs.query.filter_lints import name_words, named
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.lints import Query, Source, conjuncts, resolve, sources

__all__ = ["both_values", "dropped_filter", "opaque_id", "sum_for_count", "sum_of_key", "unasked_limit",
           "value_not_row"]

BOTH = re.compile(r"\bboth\b|\bas well as\b|\band also\b", re.IGNORECASE)
SUPERLATIVE = re.compile(
    r"\b(most|least|fewest|highest|lowest|largest|smallest|biggest|greatest|oldest|youngest|newest|latest|earliest|"
    r"longest|shortest|maximum|minimum|max|min|best|worst|top|first|last|\w{3,}est)\b", re.IGNORECASE)
LIMIT_CUES = re.compile(r"\b(one|single|a few|some|sample|example|\d+|two|three|four|five|ten)\b", re.IGNORECASE)
NAME_PARTS = re.compile(r"\b(first|last|given|family) names?\b", re.IGNORECASE)  # not a cue for one row
WHICH = re.compile(r"^\W*(which|who|whose)\b|\bthe names? of the\b", re.IGNORECASE)
HOW_MANY = re.compile(r"\b(how many|number of|count)\b", re.IGNORECASE)
REFERS_BACK = re.compile(r"\b(them|those|these|they|their|theirs|its|it|that|this|such|ones|among|of them|"
                         r"above|same)\b", re.IGNORECASE)
WIDEN = re.compile(r"\b(all|any|every|each|instead|regardless|whatever|overall|in total|altogether|other|else|"
                   r"rather|only)\b", re.IGNORECASE)


def both_values(query: Query) -> list[Finding]:
    """"both" asked, and a WHERE compares one column with two values in one row (``IN``/``OR``), with no INTERSECT
    and no HAVING to tell groups that hold both."""
    if not query.question or not BOTH.search(query.question) or query.tree.find(exp.Intersect, exp.Having):
        return []
    found = []
    for select in query.tree.find_all(exp.Select):
        for condition in conjuncts(select.args.get("where")):
            column = _either(condition)
            if column is not None:
                message = (f"{condition.sql(dialect=query.dialect)} keeps rows holding either value, but the question "
                           "asks for both: one row cannot hold both; use INTERSECT, or GROUP BY with HAVING "
                           f"COUNT(DISTINCT {column.sql(dialect=query.dialect)}) = 2")
                found.append(Finding(kind=Kind.BOTH_VALUES, message=message, where=condition.sql()))
    return distinct(found)


def _either(condition: exp.Expr) -> exp.Column | None:
    """The column ``condition`` tests against two or more literals at once, if it does."""
    condition = condition.this if isinstance(condition, exp.Paren) else condition
    if isinstance(condition, exp.In) and isinstance(condition.this, exp.Column) and not condition.args.get("query"):
        return condition.this if len(condition.expressions) >= 2 else None
    if isinstance(condition, exp.Or):
        tests = [c.this if isinstance(c, exp.Paren) else c for c in condition.flatten()]
        columns = {t.this.sql() for t in tests if isinstance(t, exp.EQ) and isinstance(t.this, exp.Column)
                   and isinstance(t.expression, exp.Literal)}
        if len(columns) == 1 and len(tests) >= 2 and all(isinstance(t, exp.EQ) for t in tests):
            return tests[0].this
    return None


def unasked_limit(query: Query) -> list[Finding]:
    """The answer's LIMIT, where the question asks for no top, first, single or counted rows: it drops the rest."""
    outer = query.tree.unnest() if isinstance(query.tree, exp.Subquery) else query.tree
    limit = outer.args.get("limit")
    question = query.question
    if limit is None or not question:
        return []
    asked = NAME_PARTS.sub(" ", question)
    if SUPERLATIVE.search(asked) or LIMIT_CUES.search(asked):
        return []
    message = (f"{limit.sql(dialect=query.dialect).strip()} keeps only some of the rows, but the question asks for "
               "all of them: leave the LIMIT out")
    return [Finding(kind=Kind.UNASKED_LIMIT, message=message, where=limit.sql())]


def sum_of_key(query: Query) -> list[Finding]:
    """``SUM`` of an id column (a key, or a column named like one) where the question asks how many."""
    if not query.question or not HOW_MANY.search(query.question):
        return []
    found = []
    for select in query.tree.find_all(exp.Select):
        tables = sources(select, query.catalog)
        for total in select.find_all(exp.Sum):
            column = total.this
            if total.parent_select is not select or not isinstance(column, exp.Column):
                continue
            resolved = resolve(column, tables)
            if resolved is None:
                continue
            source, own = resolved
            if own.primary_key or own.unique or own.references or own.name.lower().endswith("id"):
                name = total.sql(dialect=query.dialect)
                message = f"{name} adds up ids, but the question asks how many: count the rows with COUNT(*)"
                found.append(Finding(kind=Kind.SUM_OF_KEY, message=message, where=name))
    return distinct(found)


COUNT_ASKED = re.compile(r"\b(how many|number of)\b", re.IGNORECASE)
TOTAL_ASKED = re.compile(r"\b(totals?|sum|summed|amounts? of|in all|altogether|combined)\b", re.IGNORECASE)
UNITS = frozenset("""dollars euros pounds cents money hours minutes seconds days weeks months years miles kilometers
    km meters metres kilograms kg grams calories points goals runs""".split())


def sum_for_count(query: Query) -> list[Finding]:
    """"How many"/"number of" asked (and no total, sum or amount), but the answer's SELECT shows a ``SUM`` whose summed
    values (a CASE's or IIF's branches) read columns, none of whose name words is a word of the question after
    "how many", nor the counted noun a unit ("how many dollars"). ``SUM(CASE WHEN ... THEN 1 ELSE 0 END)`` is a count;
    a SUM of ids is :func:`sum_of_key`'s."""
    question = query.question
    asked = COUNT_ASKED.search(question) if question else None
    outer = query.tree.unnest() if isinstance(query.tree, exp.Subquery) else query.tree
    if asked is None or TOTAL_ASKED.search(question) or not isinstance(outer, exp.Select):
        return []
    after = normalise(question[asked.end():]).split()
    keyed = {f.where for f in sum_of_key(query)}
    if after and after[0] in UNITS:
        return []
    tables = sources(outer, query.catalog)
    found = []
    for shown in outer.expressions:
        total = shown.this if isinstance(shown, exp.Alias) else shown
        if not isinstance(total, exp.Sum) or (name := total.sql(dialect=query.dialect)) in keyed:
            continue
        measures = [c for value in _summed(total.this) for c in value.find_all(exp.Column)]
        if not measures or any(_key_like(c, tables) for c in measures):
            continue
        if any(named(w, set(after)) for c in measures for w in name_words(c.name)):
            continue
        added = ", ".join(dict.fromkeys(c.name for c in measures))
        message = (f"{name} adds up {added}, but the question asks how many: count the rows (COUNT(*), or "
                   "SUM(CASE WHEN ... THEN 1 ELSE 0 END))")
        found.append(Finding(kind=Kind.SUM_FOR_COUNT, message=message, where=name))
    return distinct(found)


def _summed(value: exp.Expr | None) -> list[exp.Expr]:
    """The values a SUM adds: a CASE's or IIF's branches (not its conditions), else the expression itself."""
    if isinstance(value, exp.Paren | exp.Distinct):
        return _summed(value.this if isinstance(value, exp.Paren) else (value.expressions or [None])[0])
    if isinstance(value, exp.Case):
        return [b for i in value.args.get("ifs") or [] for b in _summed(i.args.get("true"))] + _summed(
            value.args.get("default"))
    if isinstance(value, exp.If):
        return _summed(value.args.get("true")) + _summed(value.args.get("false"))
    return [] if value is None else [value]


def _key_like(column: exp.Column, tables: dict) -> bool:
    """Whether ``column`` is a key, a foreign key, or named like an id (what :func:`sum_of_key` judges)."""
    resolved = resolve(column, tables)
    own = resolved[1] if resolved is not None else None
    return column.name.lower().endswith("id") or (own is not None and bool(
        own.primary_key or own.unique or own.references))


def value_not_row(query: Query) -> list[Finding]:
    """"Which ... the most" asked, but the answer's SELECT is MAX/MIN aggregates alone: the extreme value, not the
    row that holds it."""
    question = query.question
    outer = query.tree.unnest() if isinstance(query.tree, exp.Subquery) else query.tree
    if not question or not isinstance(outer, exp.Select) or not WHICH.search(question) or HOW_MANY.search(question):
        return []
    if not SUPERLATIVE.search(question) or outer.args.get("group"):
        return []
    shown = [e.this if isinstance(e, exp.Alias) else e for e in outer.expressions]
    if shown and all(isinstance(e, exp.Max | exp.Min) for e in shown):
        names = ", ".join(e.sql(dialect=query.dialect) for e in shown)
        message = (f"the answer is {names}, the extreme value itself, but the question asks which row holds it: "
                   "select that row's columns and ORDER BY the value with LIMIT 1")
        return [Finding(kind=Kind.VALUE_NOT_ROW, message=message, where=names)]
    return []


def opaque_id(query: Query) -> list[Finding]:
    """A text literal compared with a column of opaque ids, where the question does not quote it."""
    if not query.question:
        return []
    asked = query.question.lower()
    found = []
    for select in query.tree.find_all(exp.Select):
        tables = sources(select, query.catalog)
        for column, literal in _compared(select):
            resolved = resolve(column, tables)
            if resolved is None or not resolved[1].opaque or literal.lower() in asked:
                continue
            source, own = resolved
            message = (f"'{literal}' is an id of {source.table.name}.{own.name} the question does not give: filter on "
                       "the columns that name what the question names, joined along the key")
            found.append(Finding(kind=Kind.OPAQUE_ID, message=message, where=f"'{literal}'"))
    return distinct(found)


def _compared(select: exp.Select) -> list[tuple[exp.Column, str]]:
    """(column, text literal) for each equality or IN test of ``select``'s WHERE and ON conditions."""
    pairs = []
    clauses = [select.args.get("where"), *(j.args.get("on") for j in select.args.get("joins") or [])]
    for clause in clauses:
        for node in (clause.find_all(exp.EQ, exp.In) if clause is not None else []):
            if node.parent_select is not select:
                continue
            if isinstance(node, exp.EQ):
                for column, value in ((node.this, node.expression), (node.expression, node.this)):
                    if isinstance(column, exp.Column) and isinstance(value, exp.Literal) and value.is_string:
                        pairs.append((column, value.this))
            elif isinstance(node.this, exp.Column) and not node.args.get("query"):
                pairs += [(node.this, v.this) for v in node.expressions if isinstance(v, exp.Literal) and v.is_string]
    return pairs


def dropped_filter(query: Query) -> list[Finding]:
    """In a follow-up that refers back ("them", "those", "its", ...), each filter of the query it continues (a column
    compared with a value) that this query, reading the same table, neither keeps nor replaces with another filter
    on that column, where the question does not widen it ("all", "instead", ...); and, where this query reads none of
    the tables the query before chose its rows from (by any condition, a subquery's too) and filters none of their
    columns, the first of those conditions: the rows referred to are left behind."""
    question = query.question
    if not query.previous or not question or WIDEN.search(question) or not REFERS_BACK.search(question):
        return []
    try:
        before = sqlglot.parse_one(query.previous, read=query.dialect)
    except (SqlglotError, RecursionError, ValueError):
        return []
    now = [c for s in query.tree.find_all(exp.Select) for clause in (s.args.get("where"), s.args.get("having"))
           for c in _filters(clause)]
    kept = {_filter_key(c)[1] for c in now}  # the columns this query filters: a new value for one is a new question
    read = {t.name.lower() for t in query.tree.find_all(exp.Table)}
    found = []
    chosen_by: list[tuple[exp.Expr, Source]] = []  # every condition of the query before, with the table it tests
    for select in before.find_all(exp.Select):
        tables = sources(select, query.catalog)
        literal = _filters(select.args.get("where"))
        for condition in conjuncts(select.args.get("where")):
            column = next(condition.find_all(exp.Column), None)
            resolved = resolve(column, tables) if column is not None else None
            if resolved is None:
                continue
            source = resolved[0]
            chosen_by.append((condition, source))
            if condition not in literal or source.node.name.lower() not in read or _filter_key(condition)[1] in kept:
                continue
            shown = condition.sql(dialect=query.dialect)
            message = (f"drops the filter {shown} of the query it follows up on, which the question does not ask to "
                       "drop: keep it")
            found.append(Finding(kind=Kind.DROPPED_FILTER, message=message, where=shown))
    if chosen_by and not any(source.node.name.lower() in read or _filter_key(c)[1] in kept for c, source in chosen_by):
        condition, table = chosen_by[0][0], chosen_by[0][1].table.name
        shown = condition.sql(dialect=query.dialect)
        message = (f"reads none of the rows the question refers back to: the query it follows up on kept the {table} "
                   f"rows where {shown}; join {table} and keep that condition")
        found.append(Finding(kind=Kind.DROPPED_FILTER, message=message, where=shown))
    return distinct(found)


def _filters(clause: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of ``clause`` that compare a column with a literal value."""
    found = []
    for condition in conjuncts(clause):
        inner = condition.this if isinstance(condition, exp.Not) else condition
        if isinstance(inner, exp.Predicate) and inner.find(exp.Column) and inner.find(exp.Literal) and not inner.find(
                exp.Select):
            found.append(condition)
    return found


def _filter_key(condition: exp.Expr) -> tuple[str, str, tuple[str, ...]]:
    """What a filter tests, however written: its operator, its column's name, its values."""
    column = next(condition.find_all(exp.Column), None)
    values = tuple(sorted(str(v.this).lower() for v in condition.find_all(exp.Literal)))
    return type(condition).__name__, column.name.lower() if column is not None else "", values
