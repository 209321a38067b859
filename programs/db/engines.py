"""PostgreSQL, MySQL/MariaDB and DuckDB behind the :class:`~.database.Database` interface, connected through
SQLAlchemy 2; :func:`open_database` opens any engine's database (SQLite's too) from its address.

Both are read-only by the engine's own guarantees, not by trusting the validator:

* **PostgreSQL** (psycopg 3): sessions start with ``default_transaction_read_only=on`` and an
  ``idle_in_transaction_session_timeout``; every query runs in its own ``READ ONLY`` transaction with
  ``SET LOCAL statement_timeout`` and ``lock_timeout``, through the extended protocol (one statement, never
  ``SELECT 1; COMMIT; DROP ...``), and is rolled back afterwards. Opening warns
  (:class:`RoleCanWriteWarning`) when the role could write, so that users give it a SELECT-only role.
* **MySQL and MariaDB** (PyMySQL): one statement per call (the client never asks for multi-statements),
  and only a query is sent: text that starts with no ``SELECT``/``WITH`` (a read-only transaction still lets
  ``SET PASSWORD`` through) or holds an executable comment ``/*! ... */`` is refused before it is sent; every query
  runs in its own ``START TRANSACTION READ ONLY`` (the session's default read-only too, since DDL commits the open
  transaction and runs in a new one) under a statement time limit (``max_statement_time`` on MariaDB,
  ``max_execution_time`` on MySQL, and ``KILL QUERY`` from a second connection as a backstop), and is
  rolled back. Opening warns (:class:`RoleCanWriteWarning`) when ``SHOW GRANTS`` says the role could write.
* **DuckDB** (duckdb-engine): the file is opened ``read_only=True`` with external access (files, network,
  extensions) disabled and the configuration locked; one statement per call; a timer interrupts a query past
  its timeout.

Rows are capped as on SQLite: at most ``max_rows + 1`` rows are fetched.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
from importlib import import_module
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.db.address import DatabaseAddress, parse_address
from text2sql_dspy.programs.db.database import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, QueryResult, SQLiteDatabase
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


# MySQL/MariaDB error codes
_MYSQL_TIMEOUTS = {1969, 3024, 1317}  # max_statement_time, max_execution_time, KILL QUERY
_MYSQL_DENIED = {
    1792,  # cannot execute statement in a READ ONLY transaction
    1142, 1143, 1044, 1045, 1227, 1370,  # command / column / database / privilege / routine access denied
    1290,  # the server's options (--read-only, --secure-file-priv) prevent the statement
    1568,  # transaction characteristics can't be changed while a transaction is in progress
    1095,  # not the owner of the thread (KILL)
}  # fmt: skip
# Privileges that only read; any other in SHOW GRANTS means the role could write (or run something that may).
_MYSQL_READ_PRIVILEGES = frozenset({"SELECT", "USAGE", "SHOW VIEW", "SHOW DATABASES", "PROXY"})
MYSQL_MIN_VERSIONS = {"MySQL": (5, 6, 5), "MariaDB": (10, 0, 0)}  # START TRANSACTION READ ONLY


_MYSQL_QUERY_STARTS = frozenset({"SELECT", "WITH", "(", "VALUES", "TABLE"})


def _first_word(sql: str) -> str:
    """The first token of ``sql`` as MySQL reads it (comments skipped), upper-cased; '' if it cannot be read."""
    from sqlglot.dialects.dialect import Dialect

    try:
        tokens = Dialect.get_or_raise("mysql").tokenize(sql[:2000])
    except Exception:
        return ""
    return tokens[0].text.upper() if tokens else ""


class QueryRefused(Exception):
    """The executor refused to send a query to the engine (counted as denied)."""


def has_executable_comment(sql: str) -> bool:
    """Whether ``sql`` holds a MySQL executable comment (``/*! ... */``, ``/*M! ... */``), whose text the server
    runs."""
    return "/*!" in sql or "/*m!" in sql.lower()


class MySQLDatabase(EngineDatabase):
    """A MySQL or MariaDB database, every query alone in a rolled-back READ ONLY transaction under a time limit."""

    dialect = "mysql"

    def __init__(self, address: DatabaseAddress, **options: Any):
        self.server = "MySQL"
        self.version = ""
        super().__init__(address, **options)

    def _create_engine(self) -> Any:
        from sqlalchemy import create_engine

        return create_engine(
            self.address.sqlalchemy_url(),
            pool_size=4,
            max_overflow=4,
            pool_pre_ping=True,
            # PyMySQL never sets CLIENT.MULTI_STATEMENTS unless asked: "SELECT 1; DROP ..." is a syntax error
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": False},
        )

    def _run(self, sql: str, timeout: float, cap: int) -> tuple[list[str], list[tuple]]:
        if has_executable_comment(sql):
            raise QueryRefused("refused: an executable comment (/*! ... */) runs its text as SQL")
        first = _first_word(sql)
        if first not in _MYSQL_QUERY_STARTS:  # a READ ONLY transaction still lets SET PASSWORD, KILL ... through
            raise QueryRefused("refused: only a query (SELECT, WITH) is sent to the server, not "
                               f"{first or 'this text'}")
        import pymysql.cursors

        with self.engine.connect() as conn:
            raw = conn.connection.driver_connection  # pymysql.Connection
            limit = (
                f"SET SESSION max_statement_time = {max(0.001, timeout):.3f}" if self.server == "MariaDB"
                else f"SET SESSION max_execution_time = {max(1, int(timeout * 1000))}"
            )  # fmt: skip
            watchdog = threading.Timer(timeout + 1.0, self._kill_query, (raw.thread_id(),))
            rows: list[tuple] = []
            columns: list[str] = []
            cursor = None
            drained = False
            try:
                with raw.cursor() as setup:
                    setup.execute(limit)
                    # the session's default too: DDL commits the open transaction and runs in a new one
                    setup.execute("SET SESSION TRANSACTION READ ONLY")
                    setup.execute("START TRANSACTION READ ONLY")
                cursor = raw.cursor(pymysql.cursors.SSCursor)  # rows streamed, never all held
                watchdog.start()
                cursor.execute(sql)
                columns = [d[0] for d in cursor.description or []]
                while len(rows) <= cap:
                    row = cursor.fetchone() if columns else None
                    if row is None:
                        drained = True
                        break
                    rows.append(tuple(row))
                return columns, rows
            finally:
                watchdog.cancel()
                try:
                    if not drained:
                        raise RuntimeError("rows left unread, or the query failed")
                    cursor.close()
                    raw.rollback()
                except Exception:  # drop the connection, never drain it: the server stops when it cannot write
                    _abandon(cursor)
                    conn.invalidate()

    def _kill_query(self, thread_id: int) -> None:
        """The backstop to the server's time limit: stop the query from a second connection (the role's own)."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql(f"KILL QUERY {int(thread_id)}")
        except Exception:  # the query ended meanwhile, or the server is gone: nothing to stop
            pass

    def _is_timeout(self, exc: Exception) -> bool:
        return _mysql_code(exc) in _MYSQL_TIMEOUTS

    def _is_denied(self, exc: Exception) -> bool:
        return isinstance(exc, QueryRefused) or _mysql_code(exc) in _MYSQL_DENIED

    def _after_connect(self, conn: Any) -> None:
        self.version = str(conn.exec_driver_sql("SELECT VERSION()").scalar())
        self.server = "MariaDB" if "mariadb" in self.version.lower() else "MySQL"
        numbers = tuple(int(n) for n in re.findall(r"\d+", self.version.split("-")[0])[:3])
        if numbers < MYSQL_MIN_VERSIONS[self.server]:
            minimum = ".".join(map(str, MYSQL_MIN_VERSIONS[self.server]))
            raise DatabaseError(
                f"{self.address.shown} runs {self.server} {self.version}, too old for read-only transactions "
                f"(START TRANSACTION READ ONLY needs {self.server} {minimum} or later): upgrade the server."
            )
        routines = conn.exec_driver_sql(
            "SELECT DISTINCT LOWER(ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION'"
        ).scalars().all()  # stored functions may write: a SELECT may not call them
        from text2sql_dspy.programs.db.policy import MYSQL_DANGEROUS_FUNCTIONS

        self.refused_functions = MYSQL_DANGEROUS_FUNCTIONS | frozenset(routines)
        grants = [str(row[0]) for row in conn.exec_driver_sql("SHOW GRANTS").all()]
        if mysql_grants_can_write(grants):
            warnings.warn(
                f"the user connecting to {self.address.shown} can write (SHOW GRANTS lists more than SELECT). Every "
                f"query still runs in a READ ONLY transaction, but give text2sql a SELECT-only user "
                f"({READ_ONLY_ROLE_HELP}).",
                RoleCanWriteWarning,
                stacklevel=4,
            )

    def _connection_hint(self, message: str) -> str:
        lowered = message.lower()
        if "pymysql" in lowered and "no module" in lowered:
            fix = "install the driver: pip install PyMySQL"
        elif "can't connect" in lowered or "connection refused" in lowered or "no such file" in lowered:
            fix = "is the server running, and are host, port (or ?unix_socket=PATH) right?"
        elif "(1045" in lowered or "access denied for user" in lowered and "to database" not in lowered:
            fix = "check the user and password in the URL (mysql+pymysql://USER:PASSWORD@HOST/DBNAME)"
        elif "unknown database" in lowered or "(1044" in lowered:
            fix = "check the database name in the URL, and that the user may read it (GRANT SELECT ON db.*)"
        else:
            fix = "check the URL (mysql+pymysql://USER@HOST:PORT/DBNAME)"
        return f"cannot connect to {self.address.shown}: {message[:300]} ({fix})."


def _abandon(cursor: Any) -> None:
    """Make PyMySQL forget an unread result, so that closing the connection does not read it to the end."""
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    if cursor is not None:
        cursor.connection = None


def mysql_grants_can_write(grants: list[str]) -> bool:
    """Whether ``SHOW GRANTS`` lines give any privilege beyond reading (roles granted are not followed)."""
    for line in grants:
        match = re.match(r"\s*GRANT\s+(.+?)\s+ON\s+", line, re.IGNORECASE | re.DOTALL)
        if match is None:
            continue  # a role granted to the user: GRANT `r` TO `u`@`h`
        privileges = re.sub(r"\([^)]*\)", "", match.group(1))  # SELECT (a, b): column lists
        for privilege in privileges.split(","):
            if " ".join(privilege.upper().split()) not in _MYSQL_READ_PRIVILEGES:
                return True
        if re.search(r"WITH\s+GRANT\s+OPTION", line, re.IGNORECASE):
            return True
    return False


def _mysql_code(exc: Exception) -> int | None:
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


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


_DRIVERS = {  # the module each engine needs, and what to install without it
    "sqlalchemy": ("sqlalchemy", "SQLAlchemy is not installed: pip install 'sqlalchemy>=2'."),
    "postgresql": ("psycopg", "the PostgreSQL driver is not installed: pip install 'psycopg[binary]'."),
    "mysql": ("pymysql", "the MySQL/MariaDB driver is not installed: pip install PyMySQL."),
    "duckdb": ("duckdb_engine", "the DuckDB driver is not installed: pip install duckdb duckdb-engine."),
}


def open_database(target: Path | str | DatabaseAddress, **options: float | int) -> SQLiteDatabase | EngineDatabase:
    """Open the database at ``target`` (a path or URL) read-only, with the engine its address names (SQLite,
    PostgreSQL, MySQL/MariaDB or DuckDB); a missing driver names its package."""
    address = parse_address(target)
    if address.engine == "sqlite":
        return SQLiteDatabase(address.path, **options)
    for module, missing in (_DRIVERS["sqlalchemy"], _DRIVERS[address.engine]):
        try:
            import_module(module)
        except ImportError:
            raise DatabaseError(missing) from None
    engine = {"postgresql": PostgresDatabase, "mysql": MySQLDatabase, "duckdb": DuckDBDatabase}[address.engine]
    return engine(address, **options)
