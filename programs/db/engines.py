"""PostgreSQL and DuckDB behind the :class:`~.database.Database` interface, connected through SQLAlchemy 2, and
what every SQLAlchemy engine shares (:class:`EngineDatabase`: the row cap, the never-raise contract, the connection
check); MySQL/MariaDB is in :mod:`.mysql_engine`, and :func:`~.opening.open_database` opens any engine's database.

Both are read-only by the engine's own guarantees, not by trusting the validator:

* **PostgreSQL** (psycopg 3): sessions start with ``default_transaction_read_only=on`` and an
  ``idle_in_transaction_session_timeout``; every query runs in its own ``READ ONLY`` transaction with
  ``SET LOCAL statement_timeout`` and ``lock_timeout``, through the extended protocol (one statement, never
  ``SELECT 1; COMMIT; DROP ...``), and is rolled back afterwards. Opening warns
  (:class:`RoleCanWriteWarning`) when the role could write, so that users give it a SELECT-only role.
* **DuckDB** (duckdb-engine): the file is opened ``read_only=True`` with external access (files, network,
  extensions) disabled and the configuration locked; one statement per call; a timer interrupts a query past
  its timeout.

Rows are capped as on SQLite: at most ``max_rows + 1`` rows are fetched.
"""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.db.address import DatabaseAddress
from text2sql_dspy.programs.db.database import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, QueryResult
from text2sql_dspy.programs.errors import DatabaseError

IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000
LOCK_TIMEOUT_MS = 1_000
CONNECT_TIMEOUT_S = 10
DUCKDB_MEMORY_LIMIT = "2GB"
READ_ONLY_ROLE_HELP = "the README's 'Your own database' gives the SQL for a read-only role"

# DuckDB opens a file once per process: every connection to it must use these same settings.
DUCKDB_CONNECT_ARGS = {
    "read_only": True,
    "config": {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "memory_limit": DUCKDB_MEMORY_LIMIT,
        "lock_configuration": True,
    },
}

# Volatile built-ins that only read (or only compute); every other volatile function may write.
HARMLESS_VOLATILE = frozenset({"random", "clock_timestamp", "timeofday", "gen_random_uuid", "uuid_generate_v4",
                               "random_normal"})


class RoleCanWriteWarning(UserWarning):
    """The database role could write; the read-only transaction still stops every write."""


class EngineDatabase:
    """What PostgreSQL and DuckDB share: the SQLAlchemy engine, the row cap, the never-raise contract."""

    dialect = ""
    refused_functions: frozenset[str] = frozenset()

    def __init__(self, address: DatabaseAddress, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_rows: int = DEFAULT_MAX_ROWS):
        self.address = address
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.engine = self._create_engine()
        self._check_connection()

    @property
    def db_id(self) -> str:
        return self.address.db_id

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run ``sql`` read-only. Errors, denials and timeouts come back in :attr:`QueryResult.error`."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.max_rows if max_rows is None else max_rows
        if not isinstance(sql, str):
            return QueryResult(error=f"TypeError: expected the SQL query as text, got {type(sql).__name__}")
        if "\x00" in sql:
            return QueryResult(error="ValueError: the query contains a NUL character")
        start = time.perf_counter()
        try:
            columns, rows = self._run(sql, timeout, cap)
        except Exception as exc:  # a Database never raises for a bad query
            timed_out = self._is_timeout(exc)
            message = f"query timed out after {timeout:g}s" if timed_out else _error_text(exc)
            return QueryResult(
                error=message, timed_out=timed_out, denied=self._is_denied(exc), elapsed_s=time.perf_counter() - start
            )
        return QueryResult(
            columns=columns, rows=rows[:cap], truncated=len(rows) > cap, elapsed_s=time.perf_counter() - start
        )

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    # -- per engine ---------------------------------------------------------------------------

    def _create_engine(self) -> Any:
        raise NotImplementedError

    def _run(self, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple]]:
        raise NotImplementedError

    def _is_timeout(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _is_denied(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _check_connection(self) -> None:
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1").all()
                self._after_connect(conn)
        except SQLAlchemyError as exc:
            self.engine.dispose()
            raise DatabaseError(self._connection_hint(_error_text(exc))) from None
        except DatabaseError:
            self.engine.dispose()
            raise

    def _after_connect(self, conn: Any) -> None:
        """Checks run once, on the first connection."""

    def _connection_hint(self, message: str) -> str:
        return f"cannot open {self.address.shown}: {message}"


class PostgresDatabase(EngineDatabase):
    """A PostgreSQL database, every query in a rolled-back READ ONLY transaction."""

    dialect = "postgres"

    def _create_engine(self) -> Any:
        from sqlalchemy import create_engine

        options = ("-c default_transaction_read_only=on "
                   f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT_MS}")
        return create_engine(
            self.address.sqlalchemy_url(),
            pool_size=4,
            max_overflow=4,
            pool_pre_ping=True,
            connect_args={"options": options, "connect_timeout": CONNECT_TIMEOUT_S, "application_name": "text2sql"},
        )

    def _run(self, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple]]:
        with self.engine.connect() as conn:
            raw = conn.connection.driver_connection  # psycopg.Connection
            try:
                with raw.cursor() as cur:
                    cur.execute("SET TRANSACTION READ ONLY")
                    cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
                    cur.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}")
                    rows: list[tuple] = []
                    # stream(): the extended protocol (one statement only) and rows fetched one at a time
                    for row in cur.stream(sql):
                        rows.append(tuple(row))
                        if len(rows) > cap:
                            break
                    columns = [d.name for d in cur.description or []]
                return columns, rows
            finally:
                try:
                    raw.rollback()
                except Exception:  # the query ended the session (pg_terminate_backend): drop the connection
                    conn.invalidate()

    def _is_timeout(self, exc: Exception) -> bool:
        return getattr(exc, "sqlstate", None) == "57014"  # query_canceled: statement_timeout

    def _is_denied(self, exc: Exception) -> bool:
        # read_only_sql_transaction, insufficient_privilege, active_sql_transaction (e.g. a COMMIT/VACUUM inside)
        return getattr(exc, "sqlstate", None) in {"25006", "42501", "25001"}

    def _after_connect(self, conn: Any) -> None:
        self.refused_functions = self._writing_functions(conn)
        if self._role_can_write(conn):
            warnings.warn(
                f"the role connecting to {self.address.shown} can write (superuser, or INSERT/UPDATE/DELETE/TRUNCATE "
                f"on a table). Every query still runs in a READ ONLY transaction, but give text2sql a SELECT-only "
                f"role ({READ_ONLY_ROLE_HELP}).",
                RoleCanWriteWarning,
                stacklevel=4,
            )

    @staticmethod
    def _writing_functions(conn: Any) -> frozenset[str]:
        """Functions the engine marks volatile (able to write), bar a few built-ins that only compute."""
        rows = conn.exec_driver_sql(
            "SELECT DISTINCT lower(proname) FROM pg_proc WHERE provolatile = 'v' AND prokind IN ('f', 'p')"
        ).all()
        return frozenset(name for (name,) in rows) - HARMLESS_VOLATILE

    @staticmethod
    def _role_can_write(conn: Any) -> bool:
        row = conn.exec_driver_sql(
            "SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) OR EXISTS ("
            " SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND left(n.nspname, 3) <> 'pg_' AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))"
        ).one()
        return bool(row[0])

    def _connection_hint(self, message: str) -> str:
        lowered = message.lower()
        if "psycopg" in lowered and "no module" in lowered:
            fix = "install the driver: pip install 'psycopg[binary]'"
        elif "connection refused" in lowered or "no such file or directory" in lowered:
            fix = "is the server running, and are host and port right?"
        elif "password authentication failed" in lowered or "no password supplied" in lowered:
            fix = "check the user and password in the URL (postgresql://USER:PASSWORD@HOST/DBNAME)"
        elif "does not exist" in lowered:
            fix = "check the database and role names in the URL"
        else:
            fix = "check the URL (postgresql://USER@HOST:PORT/DBNAME)"
        return f"cannot connect to {self.address.shown}: {message[:300]} ({fix})."



class DuckDBDatabase(EngineDatabase):
    """A DuckDB file opened read-only, external access disabled."""

    dialect = "duckdb"
    refused_functions = frozenset(
        {"read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto", "read_text",
         "read_blob", "glob", "sniff_csv", "read_ndjson", "read_json_objects", "query", "query_table"}
    )  # fmt: skip

    def __init__(self, address: DatabaseAddress, **options: Any):
        path = Path(address.path or "")
        if not path.is_file():
            raise DatabaseError(f"database file not found: {path}. Pass an existing .duckdb file (--db duckdb:///PATH).")
        super().__init__(address, **options)

    def _create_engine(self) -> Any:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import QueuePool

        return create_engine(self.address.sqlalchemy_url(), poolclass=QueuePool, pool_size=2,
                             connect_args=DUCKDB_CONNECT_ARGS)

    def _run(self, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple]]:
        with self.engine.connect() as conn:
            raw = conn.connection.driver_connection  # duckdb_engine's wrapper of a DuckDBPyConnection
            if len(raw.extract_statements(sql)) != 1:
                raise ValueError("send exactly one statement")
            timer = threading.Timer(timeout, raw.interrupt)  # DuckDB has no statement timeout of its own
            timer.start()
            try:
                cursor = raw.execute(sql)
                columns = [d[0] for d in cursor.description or []]
                rows = [tuple(r) for r in cursor.fetchmany(cap + 1)] if columns else []
            finally:
                timer.cancel()
                conn.rollback()
            return columns, rows

    def _is_timeout(self, exc: Exception) -> bool:
        return type(exc).__name__ == "InterruptException"

    def _is_denied(self, exc: Exception) -> bool:
        text = str(exc)
        return (type(exc).__name__ == "PermissionException" or "read-only mode" in text
                or "disabled by configuration" in text)

    def _connection_hint(self, message: str) -> str:
        return f"cannot open {self.address.shown} as a DuckDB file: {message[:300]} (check the file, or rebuild it)."


def _error_text(exc: Exception) -> str:
    """``Type: message`` of the driver's error, without SQLAlchemy's wrapping and background links."""
    orig = getattr(exc, "orig", None) or exc
    message = " ".join(str(orig).split("\n")[0].split()) or type(orig).__name__
    return f"{type(orig).__name__}: {message}"
