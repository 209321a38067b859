"""MySQL and MariaDB behind the :class:`~.database.Database` interface, connected through SQLAlchemy 2 and PyMySQL
(an :class:`~.engines.EngineDatabase`; :func:`~.opening.open_database` opens it from a ``mysql+pymysql://`` URL).

Read-only by the engine's own guarantees, not by trusting the validator: one statement per call (the client never
asks for multi-statements), and only a query is sent: text that starts with no ``SELECT``/``WITH`` (a read-only
transaction still lets ``SET PASSWORD`` through) or holds an executable comment ``/*! ... */`` is refused
(:class:`QueryRefused`, counted as denied) before it is sent; every query runs in its own ``START TRANSACTION READ
ONLY`` (the session's default read-only too, since DDL commits the open transaction and runs in a new one) under a
statement time limit (``max_statement_time`` on MariaDB, ``max_execution_time`` on MySQL, and ``KILL QUERY`` from a
second connection as a backstop), and is rolled back. Opening warns (:class:`~.engines.RoleCanWriteWarning`) when
``SHOW GRANTS`` says the role could write (:func:`mysql_grants_can_write`). Rows are capped as on SQLite.
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import Any

from text2sql_dspy.programs.db.address import DatabaseAddress
from text2sql_dspy.programs.db.engines import (
    CONNECT_TIMEOUT_S,
    READ_ONLY_ROLE_HELP,
    EngineDatabase,
    RoleCanWriteWarning,
)
from text2sql_dspy.programs.errors import DatabaseError

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
