"""SQL dialects: their names in prompts, and gold SQL written for SQLite carried to another engine.

Spider-format gold queries are SQLite. :func:`transpile_gold` rewrites one for PostgreSQL or DuckDB with
sqlglot: it first reads double-quoted names that are no column of the database as the strings SQLite takes
them for (``name = "Paris"``), then lets sqlglot translate functions and syntax, then :func:`portable`.

:func:`portable` carries a drafted query over SQLite habits that another engine refuses, where each has a
single meaning:

* an output alias named in ``WHERE`` or ``HAVING`` (PostgreSQL refuses; SQLite and DuckDB resolve it);
* a division by a value that is zero on some row (SQLite and DuckDB give NULL; PostgreSQL aborts);
* a date function (``EXTRACT``, ``DATE_TRUNC``, ``TO_CHAR``) over a column storing timestamps as text
  (PostgreSQL refuses);
* an integer column standing alone as a condition, ``CASE WHEN enabled`` (PostgreSQL wants a boolean);
* a selected column neither grouped nor aggregated in a grouped query, alone or beside an aggregate
  (SQLite takes it from some row of the group; PostgreSQL and DuckDB refuse);
* a subquery compared as a value that returns several rows (SQLite takes the first; both refuse).

On MySQL/MariaDB a draft is first read as SQLite when it shows SQLite's habits (:func:`_sqlite_habits`: a
``"quoted"`` name or string, ``||`` for concatenation, SQLite's date functions) and written as MySQL
(``CONCAT``, backticks, ``DATE_FORMAT``, ``DATE_ADD(... INTERVAL ...)``); a ``LIMIT`` inside an ``IN``
subquery, which MySQL refuses, is wrapped in a derived table.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

DIALECT_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL", "mysql": "MySQL"}


class TranspileError(ValueError):
    """A gold query sqlglot cannot carry to the target dialect."""


def transpile_gold(sql: str, dialect: str, column_names: Iterable[str] = ()) -> str:
    """``sql`` (SQLite) in ``dialect``, carried over the habits :func:`portable` rewrites; unchanged for SQLite.

    Raises :class:`TranspileError` when it cannot.
    """
    if dialect == "sqlite":
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError as exc:
        raise TranspileError(f"cannot parse the gold query: {str(exc)[:200]}") from None
    known = {name.lower() for name in column_names}
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for column in list(tree.find_all(exp.Column)):
        ident = column.this
        if (
            isinstance(ident, exp.Identifier)
            and ident.quoted
            and not column.table
            and ident.this.lower() not in known | aliases
        ):
            column.replace(exp.Literal.string(ident.this))
    try:
        written = tree.sql(dialect=dialect, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise TranspileError(f"cannot write the gold query in {dialect}: {str(exc)[:200]}") from None
    return portable(written, dialect, column_names)


# Engines that resolve an output alias only in ORDER BY (and GROUP BY), not in WHERE or HAVING (MySQL: not in WHERE).
_NO_ALIAS_IN_FILTERS = frozenset({"postgres", "mysql"})
# Engines that abort a query on a division by zero, where SQLite and DuckDB give NULL.
_DIVISION_BY_ZERO_RAISES = frozenset({"postgres"})
# Engines whose date functions refuse a text argument (PostgreSQL: "function extract(unknown, text) does
# not exist"); the argument of each function listed here is read as a timestamp when it is a text column.
_DATE_FUNCTIONS_NEED_TIMESTAMPS = frozenset({"postgres"})
_DATE_ARGUMENTS = {exp.Extract: "expression", exp.TimestampTrunc: "this", exp.TimeToStr: "this"}
# Engines that refuse a number where a condition belongs ("argument of CASE/WHEN must be type boolean,
# not type bigint"); an integer column alone in one of these places is compared with 0.
_NUMBERS_ARE_NOT_CONDITIONS = frozenset({"postgres"})
_CONDITION_PLACES = (
    (exp.If, "this"), (exp.Where, "this"), (exp.Having, "this"), (exp.Join, "on"),
    (exp.And, "this"), (exp.And, "expression"), (exp.Or, "this"), (exp.Or, "expression"), (exp.Not, "this"),
)
# Engines that refuse a selected column that is neither grouped nor aggregated in a grouped query (both
# say it "must appear in the GROUP BY clause or be used in an aggregate function").
_NO_BARE_COLUMNS = frozenset({"postgres", "duckdb", "mysql"})  # MySQL: ONLY_FULL_GROUP_BY, on by default
# Engines that refuse a subquery used as a value when it returns more than one row ("more than one row
# returned by a subquery used as an expression"); SQLite takes its first row.
_SCALAR_SUBQUERIES_ONE_ROW = frozenset({"postgres", "duckdb", "mysql"})
# Engines that refuse LIMIT in an IN subquery ("doesn't yet support 'LIMIT & IN/ALL/ANY/SOME subquery'").
_NO_LIMIT_IN_IN_SUBQUERIES = frozenset({"mysql"})
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
# Engines without other engines' YEAR(), MONTH() and DAY(), which small models write anyway.
_NO_DATE_PART_FUNCTIONS = frozenset({"sqlite"})
_REWRITING_DIALECTS = (
    _NO_ALIAS_IN_FILTERS | _DIVISION_BY_ZERO_RAISES | _DATE_FUNCTIONS_NEED_TIMESTAMPS | _NUMBERS_ARE_NOT_CONDITIONS
    | _NO_BARE_COLUMNS | _SCALAR_SUBQUERIES_ONE_ROW | _NO_LIMIT_IN_IN_SUBQUERIES | _NO_DATE_PART_FUNCTIONS
)


def portable(
    sql: str, dialect: str, column_names: Iterable[str] = (), text_columns: Iterable[str] = (),
    integer_columns: Iterable[str] = (),
) -> str:
    """``sql`` rewritten where ``dialect`` needs it to mean what it means on SQLite; else unchanged.

    PostgreSQL:

    * output aliases named in ``WHERE``/``HAVING`` are replaced by their expressions (``HAVING reset_count
      > 3`` -> ``HAVING COUNT(t2.id) > 3``), except a name that is also a column in ``column_names`` (the
      engine reads it as the column) or a qualified one;
    * every divisor that is not a nonzero number is guarded (``a / b`` -> ``a / NULLIF(b, 0)``), so a zero
      gives NULL as on SQLite;
    * a column named in ``text_columns`` (text-typed wherever it occurs) that a date function reads is cast
      (``EXTRACT(YEAR FROM occurred_at)`` -> ``EXTRACT(YEAR FROM CAST(occurred_at AS TIMESTAMP))``);
    * a column named in ``integer_columns`` that stands alone as a condition (a ``WHEN``, ``WHERE``,
      ``HAVING`` or ``ON``, or an operand of ``AND``, ``OR``, ``NOT``) is compared with 0 (``WHEN enabled``
      -> ``WHEN (enabled <> 0)``; NULL stays NULL, as on SQLite).

    PostgreSQL and DuckDB: in a ``GROUP BY`` query with no ``MIN`` or ``MAX`` (whose bare columns SQLite
    takes from the extreme row), a selected expression that reads a column but is neither grouped nor
    aggregated is read through ``MIN`` under its own name (``SELECT i.total FROM i GROUP BY i.number`` ->
    ``SELECT MIN(i.total) AS total ...``): the same value wherever the group determines it, and otherwise
    one of the group's values, as on SQLite. Such a column beside an aggregate is read through ``MIN``
    alone (``SUM(i.total) / c.rate`` -> ``SUM(i.total) / MIN(c.rate)``). A subquery compared as a value
    (``id = (SELECT ...)``) that has no ``LIMIT`` and may return several rows (it is not an ungrouped
    aggregate) gets ``LIMIT 1``: SQLite's value for it is its first row.

    SQLite: other engines' ``YEAR(x)``, ``MONTH(x)`` and ``DAY(x)``, which it lacks, are read with ``STRFTIME``
    (``CAST(STRFTIME('%Y', x) AS INTEGER)``).

    Rewriting a rewritten query changes nothing more. ``sql`` comes back unchanged when nothing is
    rewritten or it does not parse.
    """
    if dialect not in _REWRITING_DIALECTS:
        return sql
    replaced = False
    tree = None
    if dialect == "mysql" and _sqlite_habits(sql):
        tree = _read_sqlite_habits(sql, {name.lower() for name in column_names})
        replaced = tree is not None
    if tree is None:
        try:
            tree = sqlglot.parse_one(sql, read=dialect)
        except SqlglotError:
            return sql
    if tree is None:
        return sql
    if dialect in _NO_ALIAS_IN_FILTERS:
        replaced |= _inline_filter_aliases(tree, {name.lower() for name in column_names})
    if dialect in _DIVISION_BY_ZERO_RAISES:
        replaced |= _guard_divisions(tree)
    if dialect in _DATE_FUNCTIONS_NEED_TIMESTAMPS:
        replaced |= _timestamps_for_date_functions(tree, {name.lower() for name in text_columns})
    if dialect in _NUMBERS_ARE_NOT_CONDITIONS:
        replaced |= _compare_integer_conditions(tree, {name.lower() for name in integer_columns})
    if dialect in _NO_BARE_COLUMNS:
        replaced |= _aggregate_bare_columns(tree)
    if dialect in _SCALAR_SUBQUERIES_ONE_ROW:
        replaced |= _first_row_of_compared_subqueries(tree)
    if dialect in _NO_LIMIT_IN_IN_SUBQUERIES:
        replaced |= _derive_limited_in_subqueries(tree)
    if dialect in _NO_DATE_PART_FUNCTIONS:
        replaced |= _date_parts_as_strftime(tree)
    if not replaced:
        return sql
    try:
        return tree.sql(dialect=dialect)
    except SqlglotError:
        return sql


_SQLITE_DATE_FUNCTIONS = ("strftime(", "julianday(", "datetime(", "date('", "unixepoch(")
_DATE_UNITS = {"day": "DAY", "days": "DAY", "month": "MONTH", "months": "MONTH", "year": "YEAR", "years": "YEAR",
               "hour": "HOUR", "hours": "HOUR", "minute": "MINUTE", "minutes": "MINUTE", "second": "SECOND",
               "seconds": "SECOND"}  # fmt: skip


_STRFTIME_PARTS = {exp.Year: "%Y", exp.Month: "%m", exp.Day: "%d"}


def _date_parts_as_strftime(tree: exp.Expr) -> bool:
    """``YEAR(x)``, ``MONTH(x)``, ``DAY(x)`` (other engines' date parts, which SQLite lacks) as SQLite reads them:
    ``CAST(STRFTIME('%Y', x) AS INTEGER)``; whether any was rewritten."""
    parts = [node for node in tree.find_all(*_STRFTIME_PARTS) if isinstance(node.this, exp.Expr)]
    for node in parts:
        formatted = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_STRFTIME_PARTS[type(node)]),
                                                               node.this.copy()])
        node.replace(exp.Cast(this=formatted, to=exp.DataType.build("INTEGER")))
    return bool(parts)


def _sqlite_habits(sql: str) -> bool:
    """Whether a draft for MySQL shows SQLite's habits: ``"quoted"`` text, ``||``, or SQLite's date functions."""
    lowered = sql.lower().replace(" (", "(")
    return '"' in sql or "||" in sql or any(f in lowered for f in _SQLITE_DATE_FUNCTIONS)


def _read_sqlite_habits(sql: str, known: set[str]) -> exp.Expression | None:
    """``sql`` read as SQLite: a ``"name"`` that is no column nor alias becomes the string SQLite takes it for,
    and SQLite's date functions become MySQL's; None when it does not parse as SQLite."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    if tree is None:
        return None
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for column in list(tree.find_all(exp.Column)):
        ident = column.this
        if (isinstance(ident, exp.Identifier) and ident.quoted and not column.table
                and ident.this.lower() not in known | aliases):
            column.replace(exp.Literal.string(ident.this))
    for node in list(tree.find_all(exp.Anonymous, exp.Date)):
        replacement = _mysql_date(node)
        if replacement is not None:
            node.replace(replacement)
    return tree


def _mysql_date(node: exp.Expression) -> exp.Expression | None:
    """SQLite's ``date``/``datetime``/``julianday`` call as MySQL writes it, or None to leave it."""
    name = (node.name if isinstance(node, exp.Anonymous) else "date").lower()
    args = list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this, *node.expressions]
    if name not in ("date", "datetime", "julianday") or not args or args[0] is None:
        return None
    first = args[0]
    now = isinstance(first, exp.Literal) and first.is_string and first.this.lower() == "now"
    if name == "julianday":
        moment = exp.func("NOW") if now else first.copy()
        return sqlglot.parse_one(f"(TO_SECONDS({moment.sql('mysql')}) / 86400.0 + 1721059.5)", read="mysql")
    value: exp.Expression = exp.func("NOW") if now else first.copy()
    for modifier in args[1:]:
        if not (isinstance(modifier, exp.Literal) and modifier.is_string):
            return None
        parts = modifier.this.split()
        if len(parts) != 2 or parts[1].lower() not in _DATE_UNITS:
            return None
        try:
            amount = int(float(parts[0]))
        except ValueError:
            return None
        value = sqlglot.parse_one(
            f"DATE_ADD({value.sql('mysql')}, INTERVAL {amount} {_DATE_UNITS[parts[1].lower()]})", read="mysql"
        )
    if name == "date":
        return exp.func("DATE", value) if not isinstance(node, exp.Date) or len(args) > 1 or now else None
    return exp.func("TIMESTAMP", value)


def _derive_limited_in_subqueries(tree: exp.Expression) -> bool:
    """Wrap, in place, each ``IN (SELECT ... LIMIT n)`` as ``IN (SELECT * FROM (SELECT ... LIMIT n) AS limited)``."""
    wrapped = False
    for node in list(tree.find_all(exp.In)):
        query = node.args.get("query")
        inner = query.this if isinstance(query, exp.Subquery) else query
        if isinstance(inner, exp.Select) and inner.args.get("limit") is not None:
            derived = exp.select("*").from_(inner.copy().subquery("limited"))
            node.set("query", derived.subquery() if isinstance(query, exp.Subquery) else derived)
            wrapped = True
    return wrapped


def _inline_filter_aliases(tree: exp.Expression, known: set[str]) -> bool:
    """Replace, in place, output aliases named in each SELECT's own WHERE/HAVING; True if any was."""
    replaced = False
    for select in tree.find_all(exp.Select):
        aliases = {
            p.alias.lower(): p.this for p in select.expressions
            if isinstance(p, exp.Alias) and p.alias and p.alias.lower() not in known
        }
        if not aliases:
            continue
        for clause in (select.args.get("where"), select.args.get("having")):
            if clause is None:
                continue
            for column in list(clause.find_all(exp.Column)):
                name = column.name.lower()
                if not column.table and name in aliases and column.find_ancestor(exp.Select) is select:
                    expression = aliases[name].copy()
                    atomic = isinstance(expression, exp.Column | exp.Func | exp.Literal)
                    column.replace(expression if atomic else exp.Paren(this=expression))
                    replaced = True
    return replaced


def _guard_divisions(tree: exp.Expression) -> bool:
    """Mark, in place, each division whose divisor may be zero as safe (written ``NULLIF(d, 0)``)."""
    guarded = False
    for division in tree.find_all(exp.Div):
        divisor = division.expression
        nonzero_constant = isinstance(divisor, exp.Literal) and not divisor.is_string and float(divisor.this) != 0
        if nonzero_constant or isinstance(divisor, exp.Nullif) or division.args.get("safe"):
            continue
        division.set("safe", True)
        guarded = True
    return guarded


def _timestamps_for_date_functions(tree: exp.Expression, text_columns: set[str]) -> bool:
    """Cast, in place, each text column that a date function reads to TIMESTAMP; True if any was."""
    cast = False
    for function, argument in _DATE_ARGUMENTS.items():
        for node in list(tree.find_all(function)):
            column = node.args.get(argument)
            if isinstance(column, exp.Column) and column.name.lower() in text_columns:
                column.replace(exp.cast(column.copy(), exp.DataType.Type.TIMESTAMP))
                cast = True
    return cast


def _compare_integer_conditions(tree: exp.Expression, integer_columns: set[str]) -> bool:
    """Compare with 0, in place, each integer column that stands alone as a condition; True if any was."""
    compared = False
    for kind, place in _CONDITION_PLACES:
        for node in list(tree.find_all(kind)):
            condition = node.args.get(place)
            column = condition.unnest() if condition is not None else None  # the condition without its parentheses
            if isinstance(column, exp.Column) and column.name.lower() in integer_columns:
                condition.replace(exp.Paren(this=exp.NEQ(this=column.copy(), expression=exp.Literal.number(0))))
                compared = True
    return compared


def _aggregate_bare_columns(tree: exp.Expression) -> bool:
    """Read through MIN, in place, what each grouped SELECT selects outside any aggregate without grouping
    it (see :func:`portable`); True if anything was."""
    changed = False
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is None or any(p.find(exp.Min, exp.Max) for p in select.expressions):
            continue
        keys = group.expressions
        for index, projection in enumerate(select.expressions, start=1):
            value = projection.this if isinstance(projection, exp.Alias) else projection
            if value.find(exp.Window, exp.Subquery) is not None or _is_group_key(value, projection, index, keys):
                continue
            bare = [c for c in value.find_all(exp.Column) if not _in_aggregate(c) and not _is_grouped(c, keys)]
            if not bare:
                continue
            if value.find(exp.AggFunc) is None:  # the whole expression comes from one row of the group
                name = projection.alias_or_name if isinstance(projection, exp.Alias | exp.Column) else ""
                minimum = exp.Min(this=value.copy())
                projection.replace(exp.alias_(minimum, name, quoted=False) if name else minimum)
            else:  # beside an aggregate (SUM(t) / c.rate): each bare column alone
                for column in bare:
                    column.replace(exp.Min(this=column.copy()))
            changed = True
    return changed


def _is_group_key(value: exp.Expression, projection: exp.Expression, index: int, keys: list[exp.Expression]) -> bool:
    """Whether the ``index``-th projection is a GROUP BY key: the same expression, its output alias or its position."""
    alias = projection.alias.lower() if isinstance(projection, exp.Alias) else None
    return any(
        (isinstance(key, exp.Literal) and not key.is_string and key.this == str(index))
        or key == value
        or (alias is not None and isinstance(key, exp.Column) and not key.table and key.name.lower() == alias)
        for key in keys
    )


def _in_aggregate(column: exp.Column) -> bool:
    """Whether ``column`` is read inside an aggregate function of its own SELECT."""
    return isinstance(column.find_ancestor(exp.AggFunc, exp.Select), exp.AggFunc)


def _is_grouped(column: exp.Column, keys: list[exp.Expression]) -> bool:
    """Whether ``column`` is a GROUP BY key (by name, and by table where both name one)."""
    return any(
        isinstance(key, exp.Column)
        and key.name.lower() == column.name.lower()
        and (not key.table or not column.table or key.table.lower() == column.table.lower())
        for key in keys
    )


def _first_row_of_compared_subqueries(tree: exp.Expression) -> bool:
    """Limit, in place, each subquery compared as a value to its first row (see :func:`portable`); True if any was."""
    limited = False
    for subquery in list(tree.find_all(exp.Subquery)):
        select = subquery.this
        if (not isinstance(subquery.parent, _COMPARISONS) or not isinstance(select, exp.Select)
                or select.args.get("limit")):
            continue
        if select.args.get("group") is None and any(p.find(exp.AggFunc) for p in select.expressions):
            continue  # an aggregate over the whole input: one row already
        select.limit(1, copy=False)
        limited = True
    return limited
