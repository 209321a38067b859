"""Read-only query execution behind a small interface.

:class:`Database` is what programs, tools and metrics use to run SQL, and :class:`QueryResult` what running
one query gives back; every engine shares the default limits here. :class:`SQLiteDatabase` is here,
PostgreSQL and DuckDB in :mod:`.engines`, MySQL in :mod:`.mysql_engine`; :func:`~.opening.open_database` picks
the engine from the address (a SQLite path, or a ``sqlite:///``, ``postgresql://``, ``mysql+pymysql://`` or
``duckdb:///`` URL).
Each is read-only by the engine's own guarantees, caps rows and times queries out; none raises for a bad query.

SQLite is guarded three ways, so that no generated query can write:
the file is opened with ``mode=ro``, the connection sets ``PRAGMA query_only``, and an authorizer
denies every action but reading (no ATTACH, no PRAGMA, no writes, no extension loading).
A progress handler enforces a wall-clock timeout per query, rows are capped, and so is the size of
any one string or blob a query builds: a single huge allocation (``hex(zeroblob(4e8))``) is one
step the progress handler cannot interrupt.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from text2sql_dspy.programs.catalog.catalog import connect_readonly

__all__ = ["DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT_S", "Database", "QueryResult", "SQLiteDatabase"]

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_ROWS = 1000
MAX_VALUE_BYTES = 10_000_000  # largest string or blob a query may build (SQLite's own default is 1 GB)

_ALLOWED_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


@dataclass(frozen=True)
class QueryResult:
    """Outcome of one query: rows on success, else ``error`` (never both)."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    timed_out: bool = False
    denied: bool = False  # the engine refused it as a write or a forbidden action
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class Database(Protocol):
    """A database that runs one read-only query at a time and never raises for a bad query.

    ``dialect`` is sqlglot's name for its SQL; ``refused_functions`` names functions the engine marks as
    able to write (the validator refuses them on top of its own list).
    """

    dialect: str
    refused_functions: frozenset[str]

    def execute(self, sql: str, *, timeout_s: float = ..., max_rows: int = ...) -> QueryResult: ...


class SQLiteDatabase:
    """A SQLite file opened read-only. Safe to share between threads (one connection per thread)."""

    dialect = "sqlite"
    refused_functions: frozenset[str] = frozenset()

    def __init__(self, path: Path | str, *, timeout_s: float = DEFAULT_TIMEOUT_S, max_rows: int = DEFAULT_MAX_ROWS):
        self.path = Path(path)
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self._local = threading.local()
        connect_readonly(self.path).close()  # fail now, with a clear message, if the file is unusable

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run ``sql`` read-only. Errors, denials and timeouts come back in :attr:`QueryResult.error`."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.max_rows if max_rows is None else max_rows
        if not isinstance(sql, str):
            return QueryResult(error=f"TypeError: expected the SQL query as text, got {type(sql).__name__}")
        conn = self._connection()
        deadline = time.monotonic() + timeout
        timed_out = False

        def check_deadline() -> int:
            nonlocal timed_out
            timed_out = time.monotonic() > deadline
            return 1 if timed_out else 0

        start = time.perf_counter()
        conn.set_progress_handler(check_deadline, 10_000)
        try:
            cursor = conn.execute(sql)
            rows = cursor.fetchmany(cap + 1)
            columns = [d[0] for d in cursor.description or []]
            cursor.close()
        except (sqlite3.Error, ValueError, OverflowError, MemoryError) as exc:
            message = f"query timed out after {timeout:g}s" if timed_out else f"{type(exc).__name__}: {exc}"
            denied = "not authorized" in message or "prohibited" in message
            return QueryResult(error=message, timed_out=timed_out, denied=denied, elapsed_s=time.perf_counter() - start)
        finally:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                conn.rollback()
        return QueryResult(
            columns=columns,
            rows=[tuple(r) for r in rows[:cap]],
            truncated=len(rows) > cap,
            elapsed_s=time.perf_counter() - start,
        )

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_readonly(self.path)
            conn.set_authorizer(_authorize)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            self._local.conn = conn
        return conn


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY
