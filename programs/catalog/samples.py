"""A few stored values per column, so that a model writes ``status = 'blocked'`` and not ``'Blocked'``.

:func:`sampled` reads them through the read-only :class:`~.database.Database` itself, with queries built as
sqlglot trees in the engine's dialect. PostgreSQL's own statistics (``pg_stats.most_common_vals``) are used
where ANALYZE has gathered them; other columns are sampled from a bounded scan (the first
:data:`SCAN_ROWS` rows), so that a big table is never read whole. SQLite keeps its plain
``SELECT DISTINCT ... LIMIT`` (which stops early on its own).
"""

from __future__ import annotations

from datetime import date, time
from decimal import Decimal
from typing import Any

from sqlglot import exp

from text2sql_dspy.programs.catalog.catalog import Catalog, Column

SCAN_ROWS = 1_000
_NUMERIC_WORDS = ("INT", "NUMERIC", "DECIMAL", "REAL", "DOUBLE", "FLOAT")


def sampled(catalog: Catalog, database: Any, per_column: int = 3, max_chars: int = 40) -> Catalog:
    """A copy of ``catalog`` whose columns carry up to ``per_column`` distinct non-null stored values, read through
    ``database`` (an open :class:`~.database.Database`)."""
    statistics = _postgres_statistics(database) if database.dialect == "postgres" else {}
    tables = []
    for table in catalog.tables:
        columns = []
        for column in table.columns:
            values = statistics.get((table.name.lower(), column.name.lower()))
            if values:
                values = [_typed(v, column) for v in values[:per_column]]
            else:
                values = _distinct_values(database, table.name, column.name, per_column)
            shown = [_plain(v, max_chars) for v in values]
            columns.append(column.model_copy(update={"samples": [v for v in shown if v is not None]}))
        tables.append(table.model_copy(update={"columns": columns}))
    return Catalog(db_id=catalog.db_id, tables=tables)


def sample_query(table: str, column: str, limit: int, dialect: str) -> str:
    """``SELECT DISTINCT column ... LIMIT n`` in ``dialect``; outside SQLite over the first rows only."""
    return distinct_query(table, column, limit, dialect, scan_rows=None if dialect == "sqlite" else SCAN_ROWS)


def distinct_query(table: str, column: str, limit: int, dialect: str, *, scan_rows: int | None = None) -> str:
    """``SELECT DISTINCT column FROM table WHERE column IS NOT NULL LIMIT n`` in ``dialect``, names quoted;
    over the first ``scan_rows`` rows only, when given."""
    col = exp.column(column, quoted=True)
    source = exp.to_table(table, dialect=dialect)
    for part in source.parts:
        part.set("quoted", True)
    rows = exp.select(col).from_(source).where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null())))
    if scan_rows is not None:
        rows = exp.select(col.copy()).from_(rows.limit(scan_rows).subquery("s"))
    return rows.distinct().limit(limit).sql(dialect=dialect)


def _distinct_values(database: Any, table: str, column: str, limit: int) -> list:
    result = database.execute(sample_query(table, column, limit, database.dialect), max_rows=limit)
    return [row[0] for row in result.rows] if result.ok else []


def _postgres_statistics(database: Any) -> dict[tuple[str, str], list[str]]:
    """(table, column) -> the most common values ANALYZE recorded, most common first."""
    result = database.execute(
        "SELECT schemaname, tablename, attname, most_common_vals::text::text[] FROM pg_stats "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND most_common_vals IS NOT NULL",
        max_rows=100_000,
    )
    if not result.ok:
        return {}
    default = "public"
    found = {}
    for schema, table, column, values in result.rows:
        name = table if schema == default else f"{schema}.{table}"
        found[(name.lower(), column.lower())] = [v for v in values or [] if v is not None]
    return found


def _typed(value: str, column: Column) -> str | int | float:
    """A statistics value (text) back in its column's type, when that type is numeric."""
    kind = column.type.upper()
    if any(word in kind for word in _NUMERIC_WORDS):
        try:
            return int(value) if "INT" in kind else float(value)
        except ValueError:
            return value
    return value


def _plain(value: Any, max_chars: int) -> str | int | float | None:
    """A value as the prompt shows it: text on one line and shortened, numbers as numbers; None for blobs."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    text = value.isoformat() if isinstance(value, date | time) else str(value)
    return " ".join(text.split())[:max_chars]
