"""Lints of a query's joins, one rule each (the validator's ``RULES``): a defect that needs no model to see.

- :func:`always_true_join`: ``JOIN t AS T2 ON T1.x = T1.x`` compares a column with itself (or the condition reads
  nothing of the joined table): every row pairs with every row.
- :func:`fan_out`: ``COUNT(T1.id)`` or ``SUM(T1.x)`` of the one side of a one-to-many join, without DISTINCT: each
  T1 row is counted once per matching row of the other table.
- :func:`unused_join`: a table joined on its many side whose columns nothing else reads, with no DISTINCT or
  grouping: each row repeats once per match, and rows without one drop out.
- :func:`negation_over_join`: the question says "not", and the query filters rows of the many side with ``<>``:
  that keeps a parent with any other child, including one that also has the excluded one.
- :func:`off_key_join`: ``event.id = expense.budget_ref`` equates a foreign key with a column other than the key it
  references (``budget.id``): the rows pair by coincidence of numbers; join through the referenced table.
- :func:`unlinked_join`: ``student.id = pet.owner_id``, where both tables declare foreign keys but no chain of them
  links the two: the schema never joins these parts (another subject area; in a merged database, another source).
- :func:`counted_join_key`: ``COUNT(T2.fk)`` of the foreign key a one-to-many join equates with the one side's key,
  without DISTINCT: it counts the matching T2 rows, not the distinct rows of the one side.

A join is one-to-many from A to B where its condition equates a key of A (its primary key, or a unique column)
with a column of B that is not B's own key. Each rule works on one SELECT at a time and reads only stored tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import walk_in_scope

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.catalog.values import normalise
from text2sql_dspy.programs.catalog.words import STOPWORDS
from text2sql_dspy.programs.query.filter_lints import name_words, named, referenced
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.lints import Query, Source, conjuncts, is_key, resolve, sources
from text2sql_dspy.programs.query.names import written

__all__ = ["always_true_join", "counted_join_key", "fan_out", "negation_over_join", "off_key_join", "unlinked_join",
           "unused_join"]

NEGATION = re.compile(r"\b(not|no|never|without|none|n't|neither|nor|except)\b|n't\b", re.IGNORECASE)


def one_to_many(select: exp.Select, found: dict[str, Source]) -> Iterator[tuple[Source, Source, exp.EQ]]:
    """``(one, many, condition)`` for each join condition of ``select`` that equates a key of ``one`` with a column
    of ``many`` that is not ``many``'s own key."""
    for join in select.args.get("joins") or []:
        for condition in conjuncts(join.args.get("on")):
            if not (isinstance(condition, exp.EQ) and isinstance(condition.this, exp.Column)
                    and isinstance(condition.expression, exp.Column)):
                continue
            left, right = resolve(condition.this, found), resolve(condition.expression, found)
            if left is None or right is None or left[0].alias == right[0].alias:
                continue
            for (one, one_column), (many, many_column) in ((left, right), (right, left)):
                if is_key(one_column, one.table) and not is_key(many_column, many.table):
                    yield one, many, condition


def _selects(query: Query) -> Iterator[exp.Select]:
    yield from query.tree.find_all(exp.Select)


def always_true_join(query: Query) -> list[Finding]:
    """A join condition that compares a column with itself, or that reads no column of the table it joins."""
    found = []
    for select in _selects(query):
        for join in select.args.get("joins") or []:
            target, on = join.this, join.args.get("on")
            if not isinstance(target, exp.Table) or on is None or isinstance(on, exp.Boolean):
                continue
            alias = (target.alias_or_name or "").lower()
            columns = [c for c in on.find_all(exp.Column)]
            same = [c for c in conjuncts(on) if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column)
                    and c.this == c.expression]
            if same:
                shown = written(same[0].this.this, query.sql)
                message = (f"the join of {written(target.args.get('alias') or target.this, query.sql)} compares "
                           f"{shown} with itself, which is always true: every row pairs with every row; join on the "
                           "columns that link the two tables")
            elif (columns and not any(c.table.lower() == alias for c in columns if c.table)
                  and all(c.table for c in columns)):
                message = (f"the join condition of {written(target.args.get('alias') or target.this, query.sql)} reads "
                           "none of its columns: every row pairs with every row; join on the columns that link them")
            else:
                continue
            found.append(Finding(kind=Kind.ALWAYS_TRUE_JOIN, message=message, where=on.sql()))
    return distinct(found)


def fan_out(query: Query) -> list[Finding]:
    """COUNT or SUM (without DISTINCT) of a column of the one side of a one-to-many join, where the query does not
    group by that side's key: each of its rows is counted once per match on the many side."""
    found = []
    for select in _selects(query):
        tables = sources(select, query.catalog)
        edges = list(one_to_many(select, tables))
        if not edges or select.args.get("group"):  # a count per group: what it counts is the question's
            continue
        grouped = {(s.alias, c.name.lower()) for g in (select.args.get("group") or exp.Group()).expressions
                   if isinstance(g, exp.Column) and (r := resolve(g, tables)) for s, c in [r]}
        for aggregate in select.find_all(exp.Count, exp.Sum):
            if aggregate.parent_select is not select or isinstance(aggregate.this, exp.Distinct | exp.Star):
                continue
            if not isinstance(aggregate.this, exp.Column) or (resolved := resolve(aggregate.this, tables)) is None:
                continue
            source, _ = resolved
            for one, many, _ in edges:
                keys = {(one.alias, c.name.lower()) for c in one.table.columns if is_key(c, one.table)}
                if one.alias == source.alias and not keys & grouped:
                    name = aggregate.sql(dialect=query.dialect)
                    message = (f"{name} counts each {one.table.name} row once per matching {many.table.name} row "
                               f"(a one-to-many join): to count {one.table.name} rows, use DISTINCT")
                    found.append(Finding(kind=Kind.FAN_OUT, message=message, where=name))
                    break
    return distinct(found)


def unused_join(query: Query) -> list[Finding]:
    """A table joined on its many side that nothing outside its own join condition reads, in a SELECT without
    DISTINCT, GROUP BY or an aggregate: each row of the other side repeats once per match."""
    found = []
    for select in _selects(query):
        if select.args.get("distinct") or select.args.get("group") or any(
                a.parent_select is select for a in select.find_all(exp.AggFunc)):
            continue
        tables = sources(select, query.catalog)
        for one, many, condition in one_to_many(select, tables):
            join = condition.find_ancestor(exp.Join)
            if join is None or join.this is not many.node:
                continue
            if not _read_elsewhere(select, many, tables, join):
                message = (f"joins {many.table.name} but reads none of its columns: each {one.table.name} row repeats "
                           f"once per matching {many.table.name} row, and rows without one drop out; leave the join "
                           "out, or use DISTINCT or EXISTS if the question asks which have one")
                found.append(Finding(kind=Kind.UNUSED_JOIN, message=message, where=many.table.name))
    return distinct(found)


def _read_elsewhere(select: exp.Select, source: Source, tables: dict[str, Source], own: exp.Join) -> bool:
    """Whether any column of ``source`` is read in ``select`` outside the ON condition of its own join ``own``."""
    if any(isinstance(e, exp.Star) for e in select.expressions):
        return True  # SELECT *
    for column in walk_in_scope(select):
        if not isinstance(column, exp.Column) or column.find_ancestor(exp.Join) is own:
            continue
        if isinstance(column.this, exp.Star):
            if column.table.lower() == source.alias:
                return True  # source.*
            continue
        resolved = resolve(column, tables)
        if resolved is not None and resolved[0].alias == source.alias:
            return True
    return False


def negation_over_join(query: Query) -> list[Finding]:
    """The question says "not", and a row filter ``<>``/``NOT LIKE``/``NOT IN (values)`` reads a joined table none of
    whose columns the answer shows, over a one-to-many join: a row with any other match is kept, one that also has
    the excluded value too."""
    if not query.question or not NEGATION.search(query.question):
        return []
    found = []
    for select in _selects(query):
        tables = sources(select, query.catalog)
        edges = list(one_to_many(select, tables))
        if not edges:
            continue
        shown = {r[0].alias for e in select.expressions for c in e.find_all(exp.Column) if (r := resolve(c, tables))}
        for condition in conjuncts(select.args.get("where")):
            negated = _negated_column(condition)
            if negated is None or (resolved := resolve(negated, tables)) is None or resolved[0].alias in shown:
                continue
            kept = next((tables[a].table.name for a in shown if a in tables), "answer's")
            message = (f"{condition.sql(dialect=query.dialect)} keeps each {kept} row with any other "
                       f"{resolved[0].table.name} row, including those that also have the excluded one: use NOT IN "
                       "(SELECT ...), NOT EXISTS or EXCEPT")
            found.append(Finding(kind=Kind.NEGATION_OVER_JOIN, message=message, where=condition.sql()))
    return distinct(found)


def _negated_column(condition: exp.Expr) -> exp.Column | None:
    if isinstance(condition, exp.NEQ):
        pairs = [(condition.this, condition.expression), (condition.expression, condition.this)]
        return next((c for c, v in pairs if isinstance(c, exp.Column) and isinstance(v, exp.Literal)), None)
    if isinstance(condition, exp.Not):
        inner = condition.this
        if isinstance(inner, exp.Like | exp.ILike) and isinstance(inner.this, exp.Column):
            return inner.this
        if isinstance(inner, exp.In) and isinstance(inner.this, exp.Column) and not inner.args.get("query"):
            return inner.this
    return None


def off_key_join(query: Query) -> list[Finding]:
    """An equality of two stored tables' columns (in ON or WHERE) where one is a foreign key and the other is not the
    column it references; quiet where both reference the same key (siblings) or the other references this one."""
    found = []
    for condition, left, right in column_equalities(query):
        said = sorted(m for m in (_off_key(left, right, query.catalog), _off_key(right, left, query.catalog)) if m)
        if said:  # the side whose referenced table is the other's first: "join on budget.id"
            found.append(Finding(kind=Kind.OFF_KEY_JOIN, message=said[0][1],
                                 where=condition.sql(dialect=query.dialect)))
    return distinct(found)


def column_equalities(query: Query) -> Iterator[tuple[exp.EQ, tuple[Source, Column], tuple[Source, Column]]]:
    """``(condition, left, right)`` for each equality (in ON or WHERE, of any SELECT) of two columns that resolve to
    different stored sources."""
    for select in _selects(query):
        tables = sources(select, query.catalog)
        clauses = [*(j.args.get("on") for j in select.args.get("joins") or []), select.args.get("where")]
        for condition in (c for clause in clauses for c in conjuncts(clause)):
            if not (isinstance(condition, exp.EQ) and isinstance(condition.this, exp.Column)
                    and isinstance(condition.expression, exp.Column)):
                continue
            left, right = resolve(condition.this, tables), resolve(condition.expression, tables)
            if left is not None and right is not None and left[0].alias != right[0].alias:
                yield condition, left, right


def _off_key(key: tuple[Source, Column], other: tuple[Source, Column], catalog: Catalog) -> tuple[bool, str] | None:
    """``(whether other's table is the referenced one, message)`` when ``key`` is a foreign key and ``other`` is not
    the key it references; None where the two reach a common key along their references (the declared pair either
    way, siblings, a chain through a composite key), or ``other`` is its table's key by the same name (a reference
    declared wrong: ``actor.musical_id = musical.musical_id``)."""
    (source, column), (far, far_column) = key, other
    target = referenced(column, catalog)
    if target is None or _reached(source.table, column, catalog) & _reached(far.table, far_column, catalog):
        return None
    if is_key(far_column, far.table) and far_column.name.lower() == column.name.lower() != "id":
        return None
    table, key_column = target
    same_table = far.table is table
    fix = f"join on {table.name}.{key_column.name}" if same_table else f"join through {table.name}"
    return not same_table, (f"{source.table.name}.{column.name} references {table.name}.{key_column.name}, not "
                            f"{far.table.name}.{far_column.name}: {fix}")


def _reached(table: Table, column: Column, catalog: Catalog) -> set[tuple[int, int]]:
    """``column`` and the keys it references, directly or through others, as ids of (table, column)."""
    seen: set[tuple[int, int]] = set()
    node: tuple[Table, Column] | None = (table, column)
    while node is not None and (id(node[0]), id(node[1])) not in seen and len(seen) < 8:
        seen.add((id(node[0]), id(node[1])))
        node = referenced(node[1], catalog)
    return seen


def unlinked_join(query: Query) -> list[Finding]:
    """An equality of two stored tables' columns (in ON or WHERE) where each table has a declared foreign key (from
    it or to it) and no chain of them links the two; quiet where either table declares none, as nothing says how it
    joins."""
    found, parts = [], None
    for condition, (one, _), (other, _) in column_equalities(query):
        parts = parts if parts is not None else query.catalog.parts()
        first, second = parts.get(one.table.name.lower()), parts.get(other.table.name.lower())
        if first is not None and second is not None and first != second:
            found.append(Finding(kind=Kind.UNLINKED_JOIN, where=condition.sql(dialect=query.dialect),
                                 message=f"no declared foreign key links {one.table.name} and {other.table.name}, "
                                         "directly or through other tables: check that these are the tables the "
                                         "question means"))
    return distinct(found)


COUNTED = re.compile(r"\b(?:how many|number of|count)\b(.*)", re.IGNORECASE)
TIMES = re.compile(r"\bhow (?:many times|often)\b", re.IGNORECASE)


def counted_join_key(query: Query) -> list[Finding]:
    """``COUNT(T2.fk)`` without DISTINCT, where a one-to-many join equates ``T2.fk`` with the one side's key, and the
    query neither groups by ``T2.fk`` or by a column of the one side (a count per row), nor picks one row of the one
    side (``one.col = literal``). Given a question, only where the words it counts ("how many", "number of",
    "count", then three words, stop words aside) name the one side's table and not the other's, and not where it
    counts times; never where :func:`fan_out` already warns of the same aggregate."""
    question = query.question
    counted = COUNTED.search(question) if question and not TIMES.search(question) else None
    nouns = set([w for w in normalise(counted.group(1)).split() if w not in STOPWORDS][:3]) if counted else set()
    fanned = {f.where for f in fan_out(query)}
    found = []
    for select in _selects(query):
        tables = sources(select, query.catalog)
        grouped = {(g.table.lower() or (r[0].alias if (r := resolve(g, tables)) else ""), g.name.lower())
                   for g in (select.args.get("group") or exp.Group()).expressions if isinstance(g, exp.Column)}
        for count in select.find_all(exp.Count):
            name = count.sql(dialect=query.dialect)
            if count.parent_select is not select or not isinstance(count.this, exp.Column) or name in fanned:
                continue
            resolved = resolve(count.this, tables)
            for one, many, condition in one_to_many(select, tables) if resolved is not None else []:
                fk = _side(condition, many, tables)
                if many.alias != resolved[0].alias or fk is not resolved[1] or (many.alias, fk.name.lower()) in grouped:
                    continue
                if any(alias == one.alias for alias, _ in grouped) or _picks_one(select, one, tables):
                    continue
                if question and not (_names(one, nouns) and not _names(many, nouns)):
                    continue
                message = (f"{name} counts each matching {many.table.name} row: to count distinct "
                           f"{one.table.name} rows use COUNT(DISTINCT {count.this.sql(dialect=query.dialect)})")
                found.append(Finding(kind=Kind.COUNTED_JOIN_KEY, message=message, where=name))
                break
    return distinct(found)


def _names(source: Source, words: set[str]) -> bool:
    """Whether ``words`` name ``source``'s table (a word of its name, by :func:`~.filter_lints.named`)."""
    return any(named(w, words) for w in name_words(source.table.name))


def _side(condition: exp.EQ, source: Source, tables: dict[str, Source]) -> Column | None:
    """The column of ``condition`` that reads ``source``."""
    for column in (condition.this, condition.expression):
        resolved = resolve(column, tables)
        if resolved is not None and resolved[0].alias == source.alias:
            return resolved[1]
    return None


def _picks_one(select: exp.Select, source: Source, tables: dict[str, Source]) -> bool:
    """Whether a WHERE conjunct of ``select`` compares a column of ``source`` with a literal (``=``)."""
    for condition in conjuncts(select.args.get("where")):
        if isinstance(condition, exp.EQ):
            for column, value in ((condition.this, condition.expression), (condition.expression, condition.this)):
                resolved = resolve(column, tables) if isinstance(column, exp.Column) else None
                if resolved is not None and resolved[0].alias == source.alias and isinstance(value, exp.Literal):
                    return True
    return False
