"""The example store: verified question -> SQL pairs and notes, kept per database in one SQLite file.

    store = ExampleStore()                      # $TEXT2SQL_EXAMPLES, else <user cache dir>/examples.sqlite
    store.add_pair(source, "How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'")
    store.add_note(source, "a failed login is a login_attempts row with success = 0")
    store.examples(source)                      # oldest first

Contract:

* Every pair passes :func:`~.checks.verify_pair` before it goes in (a question; SQL that parses in the
  database's dialect, passes its validator, is a read and runs read-only). A refusal raises
  :class:`ExampleError` with the reason and the fix, and changes nothing.
* Examples are filed under :func:`~.identity.database_key`: pairs of one database are never listed for another.
* Duplicates merge. Same database, kind and normalised question (:func:`~.identity.normalise_question`):
  the same row comes back, its SQL replaced by the newer verified one (a correction), unless the
  newer one comes from a training split (origin ``train``) and the stored one from anywhere else:
  a split never overwrites what a user stored. An identical pair comes back as it is.
* Durability: WAL journal, ``synchronous=FULL``, a busy timeout, one ``BEGIN IMMEDIATE`` transaction per
  write. A process killed mid-write loses only its uncommitted write; concurrent writers wait their turn.
  Making the store (the switch to WAL, the table) is retried while another connection holds the lock, for as
  long as the busy timeout: SQLite answers "database is locked" there at once, without waiting, when two
  processes make the same new store together (a read lock that cannot be raised to a write lock).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.errors import ExampleError
from text2sql_dspy.programs.examples.checks import verify_note, verify_pair
from text2sql_dspy.programs.examples.identity import database_key, normalise_question
from text2sql_dspy.programs.examples.imports import ImportReport, import_entries, import_split_into, read_entries
from text2sql_dspy.programs.source import DataSource

__all__ = ["ExampleError", "ExampleStore", "ImportReport", "Saved", "StoredExample", "database_key",
           "default_store_path"]

STORE_ENV = "TEXT2SQL_EXAMPLES"
STORE_FILENAME = "examples.sqlite"
STORE_VERSION = 2  # 2: the dialect column
BUSY_TIMEOUT_MS = 30_000
RETRY_FIRST_WAIT_S = 0.005  # the first wait before making the store again; doubled each time, up to RETRY_MAX_WAIT_S
RETRY_MAX_WAIT_S = 0.25
TRAIN = "train"
Kind = Literal["pair", "note"]
Outcome = Literal["added", "merged", "unchanged"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS examples (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: a deleted id is never given to another example
    db_key TEXT NOT NULL,
    db_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('pair', 'note')),
    question TEXT NOT NULL,
    question_key TEXT NOT NULL,
    sql TEXT NOT NULL,
    dialect TEXT NOT NULL DEFAULT '',
    origin TEXT NOT NULL,
    checked TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    UNIQUE (db_key, kind, question_key)
);
"""


@dataclass(frozen=True)
class StoredExample:
    """One stored pair (or note: ``question`` holds its text, ``sql`` is empty). ``created`` is ISO UTC."""

    id: int
    db_key: str
    kind: Kind
    question: str
    sql: str
    origin: str
    created: str
    checked: str = ""  # how the SQL was verified: "ran read-only on sqlite: 3 rows", or checked statically
    dialect: str = ""  # the SQL's dialect (sqlglot's name), the engine it was verified on; "" for a note


@dataclass(frozen=True)
class Saved:
    """What a save did: ``added`` a new row, ``merged`` into a stored one, or found it ``unchanged``."""

    example: StoredExample
    outcome: Outcome


def default_store_path() -> Path:
    """``$TEXT2SQL_EXAMPLES``, else ``<user cache dir>/examples.sqlite`` (the cache dir of :mod:`..cache`)."""
    override = os.environ.get(STORE_ENV)
    return Path(override).expanduser() if override else default_cache_dir() / STORE_FILENAME


class ExampleStore:
    """A SQLite file of examples, safe to share between threads and processes (see the module's contract)."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self._local = threading.local()
        self._create()

    # -- adding ---------------------------------------------------------------------------------

    def add_pair(self, source: DataSource, question: str, sql: str, *, origin: str = "user") -> StoredExample:
        """Check and store a pair; :class:`ExampleError` (nothing stored) if it is refused."""
        return self.save_pair(source, question, sql, origin=origin).example

    def add_note(self, source: DataSource, text: str, *, origin: str = "user") -> StoredExample:
        """Store a short note in the user's words; :class:`ExampleError` if it is empty."""
        return self.save_note(source, text, origin=origin).example

    def save_pair(self, source: DataSource, question: str, sql: str, *, origin: str = "user") -> Saved:
        """:meth:`add_pair`, saying whether the pair was added, merged or already there."""
        verified = verify_pair(source, question, sql)
        return self._save(source, "pair", verified.question, verified.sql, origin, verified.checked, source.dialect)

    def save_note(self, source: DataSource, text: str, *, origin: str = "user") -> Saved:
        """:meth:`add_note`, saying whether the note was added or already there."""
        return self._save(source, "note", verify_note(text), "", origin, "a note", "")

    def import_file(self, source: DataSource, path: Path | str, *, origin: str = "import") -> ImportReport:
        """Import a JSON list of {"question", "sql" or "query"} (an :meth:`export` too) or a CSV with question,sql
        columns.

        An entry's own ``origin`` and ``kind`` (as :meth:`export` writes them) are kept; else ``origin`` applies.
        SQL whose ``dialect`` is another engine's is transpiled to this database's before the checks.
        """
        return import_entries(self, source, read_entries(Path(path), origin))

    def import_split(self, data_dir: Path | str, split: str, *, origin: str = TRAIN,
                     progress: bool = True) -> ImportReport:
        """Import a Spider-format split, each entry into its ``db_id``'s database, one database at a time."""
        return import_split_into(self, Path(data_dir), split, origin, progress=progress)

    # -- reading --------------------------------------------------------------------------------

    def examples(self, source_or_key: DataSource | str, kind: Kind | None = None) -> list[StoredExample]:
        """The database's examples (pairs and notes, or one ``kind``), oldest first."""
        query, args = "SELECT * FROM examples WHERE db_key = ?", [_key(source_or_key)]
        if kind is not None:
            query, args = query + " AND kind = ?", [*args, kind]
        with self._connect() as conn:
            return [_example(row) for row in conn.execute(query + " ORDER BY id", args)]

    def count(self, source_or_key: DataSource | str) -> int:
        """How many examples (pairs and notes) the database has."""
        with self._connect() as conn:
            return conn.execute("SELECT count(*) FROM examples WHERE db_key = ?", [_key(source_or_key)]).fetchone()[0]

    def keys(self) -> dict[str, int]:
        """Every database key in the store, with its number of examples."""
        with self._connect() as conn:
            return dict(conn.execute("SELECT db_key, count(*) FROM examples GROUP BY db_key "
                                     "ORDER BY db_key").fetchall())

    def export(self, source_or_key: DataSource | str, path: Path | str) -> int:
        """Write the database's examples as a JSON list :meth:`import_file` reads back; how many were written."""
        rows = [
            {"question": e.question, "sql": e.sql, "kind": e.kind, "origin": e.origin, "dialect": e.dialect}
            for e in self.examples(source_or_key)
        ]
        return _write_json(Path(path).expanduser(), rows)

    def dump(self, path: Path | str) -> int:
        """Write every example of every database, with its key, as JSON that :meth:`restore` reads back."""
        with self._connect() as conn:
            rows = [dict(row) for row in conn.execute(f"SELECT {', '.join(DUMPED)} FROM examples ORDER BY id")]
        return _write_json(Path(path).expanduser(), rows)

    def restore(self, path: Path | str) -> int:
        """Add the examples of a :meth:`dump` (checked when they were first stored, so not checked again)
        that this store lacks; how many were added."""
        try:
            rows = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
            if not isinstance(rows, list):
                raise TypeError(f"a JSON list was expected, not {type(rows).__name__}")
            values = [[row[name] for name in DUMPED] + [normalise_question(row["question"]), _now()] for row in rows]
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ExampleError(f"cannot restore examples from {path}: {exc!r}. "
                               "Give a file written by a compile.") from None
        with self._write() as conn:
            before = conn.total_changes
            conn.executemany(
                f"INSERT OR IGNORE INTO examples ({', '.join(DUMPED)}, question_key, updated)"
                f" VALUES ({', '.join('?' * (len(DUMPED) + 2))})", values)
            return conn.total_changes - before

    # -- changing -------------------------------------------------------------------------------

    def delete(self, source_or_key: DataSource | str, example_id: int) -> bool:
        """Delete one example of this database; False if it has none with that id."""
        with self._write() as conn:
            cursor = conn.execute("DELETE FROM examples WHERE id = ? AND db_key = ?", [example_id, _key(source_or_key)])
            return cursor.rowcount > 0

    def _save(
        self, source: DataSource, kind: Kind, question: str, sql: str, origin: str, checked: str, dialect: str
    ) -> Saved:
        key, question_key, now = source.store_key, normalise_question(question), _now()
        with self._write() as conn:
            row = conn.execute(
                "SELECT * FROM examples WHERE db_key = ? AND kind = ? AND question_key = ?", [key, kind, question_key]
            ).fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO examples (db_key, db_id, kind, question, question_key, sql, dialect, origin, checked,"
                    " created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [key, source.db_id, kind, question, question_key, sql, dialect, origin, checked, now, now],
                )
                return Saved(self._row(conn, cursor.lastrowid), "added")
            if row["sql"] == sql or (origin == TRAIN and row["origin"] != TRAIN):
                return Saved(_example(row), "unchanged")
            conn.execute(
                "UPDATE examples SET question = ?, sql = ?, dialect = ?, origin = ?, checked = ?, updated = ? "
                "WHERE id = ?",
                [question, sql, dialect, origin, checked, now, row["id"]],
            )
            return Saved(self._row(conn, row["id"]), "merged")

    # -- the file -------------------------------------------------------------------------------

    def _create(self) -> None:
        """Make the file a store if it is not one yet (WAL, the table); a store already made is only checked.

        Retried while the database is locked, for up to the busy timeout (see the module's contract)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExampleError(f"cannot create {self.path.parent} for the example store: {exc}. {_FIX}") from None
        with self._connect() as conn:
            deadline, wait = time.monotonic() + BUSY_TIMEOUT_MS / 1000, RETRY_FIRST_WAIT_S
            while True:
                try:
                    self._make(conn)
                    return
                except sqlite3.OperationalError as exc:
                    if not _locked(exc) or time.monotonic() + wait > deadline:
                        raise
                time.sleep(wait)
                wait = min(wait * 2, RETRY_MAX_WAIT_S)

    def _make(self, conn: sqlite3.Connection) -> None:
        """One try at :meth:`_create`; a SQLite error is raised as it is, for the caller to retry."""
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "examples" not in tables:
            raise ExampleError(f"{self.path} is a SQLite database but not an example store. {_FIX}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > STORE_VERSION:
            raise ExampleError(f"{self.path} was written by a newer text2sql-dspy (store version {version}). "
                               "Upgrade it.")
        if "examples" in tables and version == STORE_VERSION:
            return
        conn.execute("PRAGMA journal_mode = WAL")  # kept in the file: every later connection uses it
        with _transaction(conn):
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(examples)")}
            if columns and "dialect" not in columns:  # a version 1 store
                conn.execute("ALTER TABLE examples ADD COLUMN dialect TEXT NOT NULL DEFAULT ''")
            conn.execute(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {STORE_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; a SQLite error while it is used becomes an :class:`ExampleError`."""
        try:
            yield self._connection()
        except sqlite3.DatabaseError as exc:
            raise ExampleError(f"cannot use the example store {self.path}: {exc}. {_FIX}") from None

    def _connection(self) -> sqlite3.Connection:
        """One connection per thread and process, kept open: reopening a WAL file costs a checkpoint each time."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise ExampleError(f"cannot open the example store {self.path}: {exc}. {_FIX}") from None
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end); the store opens it again if used."""
        conn, self._local.conn = getattr(self._local, "conn", None), None
        if conn is not None:
            conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, taken for writing at its start (so a read inside it is never made stale by another
        writer)."""
        with self._connect() as conn, _transaction(conn):
            yield conn

    @staticmethod
    def _row(conn: sqlite3.Connection, example_id: int | None) -> StoredExample:
        return _example(conn.execute("SELECT * FROM examples WHERE id = ?", [example_id]).fetchone())


DUMPED = ("db_key", "db_id", "kind", "question", "sql", "dialect", "origin", "checked", "created")
_FIX = "Fix: pass --examples PATH (or set TEXT2SQL_EXAMPLES) to a writable .sqlite file of its own."


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back when the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused for a lock another connection holds ("database is locked", SQLITE_BUSY)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == sqlite3.SQLITE_BUSY) or "database is locked" in str(exc)


def _write_json(target: Path, rows: list[dict]) -> int:
    """Write ``rows`` to ``target`` in one step (a temporary file, then a rename); how many were written."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=2, ensure_ascii=False)
        os.replace(temp, target)
    except OSError as exc:
        raise ExampleError(f"cannot write {target}: {exc}. Give a path in a writable folder.") from None
    return len(rows)


def _key(source_or_key: DataSource | str) -> str:
    return source_or_key if isinstance(source_or_key, str) else source_or_key.store_key


def _example(row: sqlite3.Row) -> StoredExample:
    return StoredExample(
        id=row["id"], db_key=row["db_key"], kind=row["kind"], question=row["question"], sql=row["sql"],
        origin=row["origin"], created=row["created"], checked=row["checked"], dialect=row["dialect"],
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
