"""The example store: every pair checked before it goes in, duplicates merged, databases kept apart,
files imported and exported, and nothing committed ever lost to a second writer or a killed process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import BAD_SQL, GOOD_SQL
from tests.store_worker import pair
from tests.tiny_db import build_tiny_db, write_spider_folder
from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.catalog.catalog import introspect_sqlite
from text2sql_dspy.programs.examples.checks import STATIC_ONLY
from text2sql_dspy.programs.examples.store import (
    ExampleError,
    ExampleStore,
    StoredExample,
    database_key,
    default_store_path,
)  # fmt: skip
from text2sql_dspy.programs.source import DataSource, open_source

REPO = Path(__file__).resolve().parent.parent
QUESTION = "How many users are suspended?"
# A runtime error in the last (sixth) row only: the validator's one-row dry run passes, the full read-only run fails.
FAILS_LATE = "SELECT CASE WHEN id = 6 THEN abs(-9223372036854775808) ELSE id END FROM login_attempts ORDER BY id"


@pytest.fixture
def store(tmp_path: Path) -> ExampleStore:
    return ExampleStore(tmp_path / "examples.sqlite")


@pytest.fixture
def source(tiny_db: Path) -> DataSource:
    return open_source(tiny_db)


def other_database(folder: Path) -> DataSource:
    """A database with the tiny one's name and one more table: another database, so another key."""
    path = build_tiny_db(folder)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute("INSERT INTO projects VALUES (1, 'Apollo')")
    conn.close()
    return open_source(path)


@pytest.mark.parametrize(
    ("question", "sql", "reason"),
    [
        ("", GOOD_SQL, "the question is empty"),
        ("   \n", GOOD_SQL, "the question is empty"),
        (QUESTION, "", "the SQL is empty"),
        (QUESTION, "INSERT INTO users VALUES (9, 1, 'x@y.test', 'X', 'active', NULL)",
         "not a read: dangerous operation: INSERT"),
        (QUESTION, "UPDATE users SET status = 'active'", "not a read: dangerous operation: UPDATE"),
        (QUESTION, "DELETE FROM users", "not a read: dangerous operation: DELETE"),
        (QUESTION, "DROP TABLE users", "not a read: dangerous operation: DROP"),
        (QUESTION, f"{GOOD_SQL}; DROP TABLE users", "not a read: dangerous operation: multiple statements"),
        (QUESTION, BAD_SQL, "unknown column 'state' (did you mean: status?"),
        (QUESTION, "SELECT count(*) FROM user", "unknown table 'user' (did you mean: users?"),
        (QUESTION, "SELEC count(*) FROM users", "syntax error"),
        (QUESTION, "SELECT abs(-9223372036854775808) FROM users", "integer overflow"),
        (QUESTION, FAILS_LATE, "fails to run on database 'tiny': OperationalError: integer overflow"),
        # a pair written for another database
        (QUESTION, "SELECT name FROM projects", "invalid for database 'tiny': unknown table 'projects'"),
    ],
)
def test_a_bad_pair_is_refused_with_its_reason_and_changes_nothing(
    store: ExampleStore, source: DataSource, question: str, sql: str, reason: str
) -> None:
    store.add_pair(source, "How many users are there?", "SELECT count(*) FROM users")
    before = store.examples(source)
    with pytest.raises(ExampleError) as refused:
        store.add_pair(source, question, sql)
    message = str(refused.value)
    assert reason in message, message
    assert "Fix" in message or "Give" in message or "Store" in message  # it names the fix
    assert store.examples(source) == before
    assert source.database.execute("SELECT count(*) FROM users").rows == [(3,)]  # the data is untouched too


def test_a_good_pair_is_stored_as_run(store: ExampleStore, source: DataSource) -> None:
    stored = store.add_pair(source, f"  {QUESTION} ", f"```sql\n{GOOD_SQL};\n```")
    assert (stored.kind, stored.question, stored.sql, stored.origin) == ("pair", QUESTION, GOOD_SQL, "user")
    assert stored.db_key == database_key(source) and stored.checked == "ran read-only on sqlite: 1 row"
    assert stored.created.endswith("+00:00")
    assert store.examples(source) == [stored] and store.count(source) == 1


def test_without_a_database_a_pair_is_checked_statically_and_says_so(store: ExampleStore, source: DataSource) -> None:
    schema_only = DataSource(source.db_id, source.catalog, None)
    stored = store.add_pair(schema_only, QUESTION, GOOD_SQL)
    assert stored.checked == STATIC_ONLY
    assert store.examples(source) == [stored]  # same db_id and catalog: the same database
    with pytest.raises(ExampleError, match="did you mean: status"):
        store.add_pair(schema_only, "Who is suspended?", BAD_SQL)


def test_a_correction_replaces_the_sql_of_the_same_question(store: ExampleStore, source: DataSource) -> None:
    question, sql = "How many users have failed to log in?", "SELECT count(*) FROM login_attempts WHERE success = 0"
    first = store.add_pair(source, question, sql)
    again = store.save_pair(source, question, sql)
    assert again.outcome == "unchanged" and again.example == first
    fixed_sql = "SELECT count(DISTINCT user_id) FROM login_attempts WHERE success = 0"
    fixed = store.save_pair(source, "how many users have  failed to log in", fixed_sql, origin="confirmed")
    assert fixed.outcome == "merged" and fixed.example.id == first.id
    assert (fixed.example.sql, fixed.example.origin, fixed.example.created) == (fixed_sql, "confirmed", first.created)
    assert store.count(source) == 1


def test_a_training_split_never_overwrites_what_a_user_stored(store: ExampleStore, source: DataSource) -> None:
    mine = store.add_pair(source, QUESTION, GOOD_SQL, origin="confirmed")
    kept = store.save_pair(source, QUESTION, "SELECT count(id) FROM users WHERE status = 'suspended'", origin="train")
    assert kept.outcome == "unchanged" and kept.example == mine


def test_notes(store: ExampleStore, source: DataSource) -> None:
    note = store.add_note(source, "a failed login is a  login_attempts row with success = 0")
    assert (note.kind, note.question, note.sql) == ("note", "a failed login is a login_attempts row with success = 0",
                                                    "")
    assert store.add_note(source, "A failed login is a login_attempts row with success = 0.") == note
    pair_ = store.add_pair(source, QUESTION, GOOD_SQL)
    assert store.examples(source, "note") == [note] and store.examples(source, "pair") == [pair_]
    with pytest.raises(ExampleError, match="note refused: it is empty"):
        store.add_note(source, "  ")


def test_pairs_of_one_database_are_never_shown_on_another(store: ExampleStore, source: DataSource,
                                                          tmp_path: Path) -> None:
    other = other_database(tmp_path)
    assert database_key(other) != database_key(source)
    mine = store.add_pair(source, QUESTION, GOOD_SQL)
    theirs = store.add_pair(other, "How many projects are there?", "SELECT count(*) FROM projects")
    assert store.examples(source) == [mine] and store.examples(other) == [theirs]
    assert store.delete(other, mine.id) is False and store.examples(source) == [mine]  # an id of another database
    assert store.delete(source, mine.id) is True and store.examples(source) == [] and store.count(other) == 1


def test_the_key_follows_the_catalog_not_the_file(tiny_db: Path, source: DataSource, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "tiny.sqlite"
    moved.parent.mkdir()
    shutil.copy(tiny_db, moved)
    assert database_key(open_source(moved)) == database_key(source)  # moved on disk: the same pairs
    shouting = introspect_sqlite(tiny_db).model_copy(deep=True)
    for table in shouting.tables:
        table.name = table.name.upper()
        table.columns.reverse()
    assert database_key(DataSource("TINY", shouting, None)) == database_key(source)  # case and order do not count
    renamed = tmp_path / "tiny_copy.sqlite"
    shutil.copy(tiny_db, renamed)
    assert database_key(open_source(renamed)) != database_key(source)  # another db_id


def test_the_key_is_the_same_on_duckdb(tiny_db: Path, source: DataSource, tmp_path: Path, store: ExampleStore) -> None:
    from text2sql_dspy.programs.db.transfer import copy_sqlite_database

    target = f"duckdb:///{tmp_path / 'tiny.duckdb'}"
    copy_sqlite_database(tiny_db, target)
    on_duckdb = open_source(target)
    mine = store.add_pair(source, QUESTION, GOOD_SQL)
    assert store.examples(on_duckdb) == [mine] and mine.dialect == "sqlite"
    theirs = store.add_pair(on_duckdb, "Who signed in on 2024-05-01?", "SELECT user_id FROM login_attempts "
                            "WHERE CAST(attempted_at AS TIMESTAMP)::DATE = DATE '2024-05-01'")  # fmt: skip
    assert (theirs.checked, theirs.dialect) == ("ran read-only on duckdb: 2 rows", "duckdb")
    exported = tmp_path / "from-duckdb.json"
    store.export(on_duckdb, exported)
    back = ExampleStore(tmp_path / "back.sqlite")
    assert back.import_file(source, exported).added == 2  # DuckDB's '::' cast carried to SQLite before the checks
    assert "::" not in back.examples(source)[1].sql and back.examples(source)[1].dialect == "sqlite"


def test_export_then_import_round_trip(store: ExampleStore, source: DataSource, tmp_path: Path) -> None:
    store.add_pair(source, QUESTION, GOOD_SQL)
    store.add_note(source, "a failed login is a login_attempts row with success = 0", origin="confirmed")
    store.add_pair(
        source, "Which organizations are on the Business plan?",
        "SELECT name FROM organizations WHERE plan = 'Business'",
        origin="train",
    )
    exported = tmp_path / "out" / "pairs.json"
    assert store.export(source, exported) == 3
    fresh = ExampleStore(tmp_path / "fresh.sqlite")
    report = fresh.import_file(source, exported)
    assert (report.added, report.merged, report.unchanged, report.refused) == (3, 0, 0, [])

    def shown(s: ExampleStore) -> list[tuple[str, str, str, str]]:
        return [(e.kind, e.question, e.sql, e.origin) for e in s.examples(source)]

    assert shown(fresh) == shown(store)
    assert fresh.import_file(source, exported).unchanged == 3  # a second import changes nothing


def test_dump_then_restore_keeps_every_database_and_field(
    store: ExampleStore, source: DataSource, tmp_path: Path
) -> None:
    store.add_pair(source, QUESTION, GOOD_SQL)
    store.add_note(source, "a failed login is a login_attempts row with success = 0")
    (tmp_path / "other").mkdir()
    other = other_database(tmp_path / "other")
    store.add_pair(other, "How many projects are there?", "SELECT count(*) FROM projects", origin="train")
    assert store.dump(tmp_path / "dump.json") == 3
    fresh = ExampleStore(tmp_path / "fresh.sqlite")
    assert fresh.restore(tmp_path / "dump.json") == 3
    assert fresh.restore(tmp_path / "dump.json") == 0  # what is there already is kept as it is

    def rows(s: ExampleStore) -> list[tuple]:
        return [(e.db_key, e.kind, e.question, e.sql, e.origin, e.checked, e.dialect, e.created)
                for key in s.keys() for e in s.examples(key)]

    assert rows(fresh) == rows(store) and fresh.keys() == store.keys()


@pytest.mark.parametrize("content", ["not json", "{}", '[{"question": "q"}]', "[1]"])
def test_restoring_from_a_bad_file_is_refused_and_changes_nothing(store: ExampleStore, tmp_path: Path,
                                                                  content: str) -> None:
    (tmp_path / "dump.json").write_text(content)
    with pytest.raises(ExampleError, match="cannot restore examples from"):
        store.restore(tmp_path / "dump.json")
    assert store.keys() == {}


def test_json_and_csv_files_import_the_good_rows_and_list_the_refused(
    store: ExampleStore, source: DataSource, tmp_path: Path
) -> None:
    rows = [
        {"question": QUESTION, "query": GOOD_SQL},  # Spider's "query" works as well as "sql"
        {"question": "Which users never logged in?", "sql": "SELECT full_name FROM users WHERE last_login_at IS NULL"},
        {"question": "Drop them", "sql": "DROP TABLE users"},
        {"question": "", "sql": GOOD_SQL},
        {"sql": GOOD_SQL},
    ]
    as_json = tmp_path / "pairs.json"
    as_json.write_text(json.dumps(rows))
    report = store.import_file(source, as_json)
    assert (report.added, report.merged, len(report.refused)) == (2, 0, 3)
    assert [(q, reason.split(":")[0]) for q, _, reason in report.refused] == [
        ("Drop them", "pair refused, the SQL is not a read"), ("", "pair refused"), ("", "pair refused"),
    ]
    assert all(e.origin == "import" for e in store.examples(source))

    as_csv = tmp_path / "pairs.csv"
    as_csv.write_text(
        "Question,SQL\n"
        f'"{QUESTION}","SELECT count(id) FROM users WHERE status = \'suspended\'"\n'
        '"Who signed in, ever?","SELECT DISTINCT user_id FROM login_attempts WHERE success = 1"\n'
        '"Bad name","SELECT nme FROM organizations"\n'
        '"On two lines","SELECT name\n  FROM organizations"\n'
    )
    report = store.import_file(source, as_csv, origin="csv")
    assert (report.added, report.merged, len(report.refused)) == (2, 1, 1)
    assert "unknown column 'nme' (did you mean: name?" in report.refused[0][2]
    assert store.examples(source)[-1].sql == "SELECT name\n  FROM organizations"
    assert store.count(source) == 4


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("pairs.json", "{not json", "is not valid JSON"),
        ("pairs.json", '{"question": "q", "sql": "SELECT 1"}', "must hold a JSON list of objects"),
        ("pairs.csv", "q,s\nx,y\n", "needs a header row naming question and sql"),
        ("absent.json", None, "file not found"),
    ],
)
def test_an_unreadable_file_is_refused_whole(
    store: ExampleStore, source: DataSource, tmp_path: Path, name: str, text: str | None, message: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ExampleError, match=message):
        store.import_file(source, path)
    assert store.count(source) == 0


def test_a_spider_folder_split_goes_to_its_databases(store: ExampleStore, tiny_db: Path, tmp_path: Path) -> None:
    folder = write_spider_folder(tmp_path / "spider", tiny_db, {"train": [(QUESTION, GOOD_SQL), ("Bad", BAD_SQL)]})
    report = store.import_split(folder, "train", progress=False)
    assert (report.added, len(report.refused)) == (1, 1) and "did you mean: status" in report.refused[0][2]
    tiny = open_source(folder / "database" / "tiny" / "tiny.sqlite")
    assert report.keys == {"tiny": database_key(tiny)}
    assert [(e.question, e.origin) for e in store.examples(tiny)] == [(QUESTION, "train")]


def test_the_bundled_train_split_goes_in_whole(store: ExampleStore) -> None:
    gold = json.loads((BUNDLED_DATA / "train.json").read_text())
    report = store.import_split(BUNDLED_DATA, "train", progress=False)
    assert report.refused == [], report.refused
    assert (report.added, report.merged, report.unchanged) == (len(gold), 0, 0)
    assert list(report.keys) == ["saas"] and store.count(report.keys["saas"]) == len(gold)
    assert store.import_split(BUNDLED_DATA, "train", progress=False).unchanged == len(gold)


def test_the_store_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TEXT2SQL_EXAMPLES", raising=False)
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))
    assert default_store_path() == tmp_path / "cache" / "examples.sqlite"
    monkeypatch.setenv("TEXT2SQL_EXAMPLES", str(tmp_path / "mine.sqlite"))
    assert ExampleStore().path == tmp_path / "mine.sqlite" and (tmp_path / "mine.sqlite").is_file()


def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tiny_db: Path, tmp_path: Path) -> None:
    before = tiny_db.read_bytes()
    with pytest.raises(ExampleError, match="is a SQLite database but not an example store"):
        ExampleStore(tiny_db)
    assert tiny_db.read_bytes() == before
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(ExampleError, match="example store .*junk.sqlite: file is not a database"):
        ExampleStore(junk)


def worker(store_path: Path, db: Path, prefix: str, count: int, go: Path | None = None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tests.store_worker", str(store_path), str(db), prefix, str(count)]
    return subprocess.Popen(
        [*argv, *([str(go)] if go else [])], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_processes_adding_at_once_lose_nothing(tiny_db: Path, tmp_path: Path) -> None:
    path, go = tmp_path / "examples.sqlite", tmp_path / "go"
    children = [worker(path, tiny_db, prefix, 40, go) for prefix in ("first", "second")]
    for child in children:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
    go.touch()  # both start adding at the same moment
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        assert out.count("committed") == 40
    stored = ExampleStore(path).examples(open_source(tiny_db))
    assert sorted(e.question for e in stored) == sorted(pair(p, i)[0] for p in ("first", "second") for i in range(40))
    assert len({e.id for e in stored}) == 80


@pytest.mark.parametrize("file", ["new", "version 1"])
def test_opening_a_store_another_connection_is_writing_waits_for_it(tmp_path: Path, file: str) -> None:
    """Switching to WAL raises a read lock to a write lock: SQLite says "database is locked" at once, without its
    busy timeout, while another connection writes. Two processes making one new store together meet this."""
    import threading
    import time

    path = tmp_path / "examples.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    if file == "version 1":  # a store from before the dialect column, in the rollback journal
        other.execute("CREATE TABLE examples (id INTEGER PRIMARY KEY, db_key TEXT, kind TEXT, question TEXT, sql TEXT)")
    other.execute("BEGIN IMMEDIATE")  # the other connection's write lock, held for a moment
    if file == "version 1":
        other.execute("INSERT INTO examples (db_key, kind, question, sql) VALUES ('k', 'note', 'q', '')")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    try:
        store = ExampleStore(path)
    finally:
        release.join()
        other.close()
    assert time.monotonic() - started >= 0.4  # it waited for the lock, and then made the store
    assert store.keys() == ({"k": 1} if file == "version 1" else {})
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert "dialect" in {row[1] for row in conn.execute("PRAGMA table_info(examples)")}
    conn.close()


def test_threads_sharing_one_store_lose_nothing(store: ExampleStore, source: DataSource) -> None:
    """As a web server's threads share it: every call has its own connection."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = [pair(f"thread {t}", i) for t in range(4) for i in range(15)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        added = list(pool.map(lambda job: store.add_pair(source, *job), jobs))
    assert len({e.id for e in added}) == 60
    assert sorted(e.question for e in store.examples(source)) == sorted(q for q, _ in jobs)


def test_a_process_killed_mid_write_loses_nothing_it_committed(tiny_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "examples.sqlite"
    child = worker(path, tiny_db, "doomed", 10_000)
    assert child.stdout.readline().strip() == "ready", child.stderr.read()
    committed = [child.stdout.readline() for _ in range(25)]
    os.kill(child.pid, signal.SIGKILL)  # somewhere inside the 26th add: checking, or writing
    child.wait(timeout=30)
    committed += child.stdout.read().splitlines()  # what it reported before it died
    reported = {line.split(" ", 2)[2].strip() for line in committed if line.startswith("committed")}
    assert len(reported) >= 25

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
    store, source = ExampleStore(path), open_source(tiny_db)
    stored = {e.question for e in store.examples(source)}
    assert reported <= stored
    assert store.add_pair(source, QUESTION, GOOD_SQL) in store.examples(source)  # and it takes new pairs


def test_stored_example_fields() -> None:
    assert [f for f in StoredExample.__dataclass_fields__] == [
        "id", "db_key", "kind", "question", "sql", "origin", "created", "checked", "dialect",
    ]


def test_a_version_1_store_gains_the_dialect_column_and_keeps_its_pairs(tmp_path: Path, source: DataSource) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE examples (id INTEGER PRIMARY KEY AUTOINCREMENT, db_key TEXT NOT NULL, db_id TEXT NOT NULL,"
            " kind TEXT NOT NULL, question TEXT NOT NULL, question_key TEXT NOT NULL, sql TEXT NOT NULL,"
            " origin TEXT NOT NULL, checked TEXT NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL,"
            " UNIQUE (db_key, kind, question_key))"
        )
        conn.execute(
            "INSERT INTO examples VALUES (1, ?, 'tiny', 'pair', ?, 'how many users are suspended', ?, 'user', 'ran', "
            "'t', 't')",
            [database_key(source), QUESTION, GOOD_SQL],
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    store = ExampleStore(path)
    assert [(e.id, e.sql, e.dialect) for e in store.examples(source)] == [(1, GOOD_SQL, "")]
    assert store.add_pair(source, "Who is active?",
                          "SELECT full_name FROM users WHERE status = 'active'").dialect == "sqlite"


def test_the_same_database_on_postgresql_keeps_its_pairs(postgres, store: ExampleStore, tmp_path: Path) -> None:  # noqa: ANN001
    """The bundled database served from PostgreSQL: the same key, and its SQLite gold split goes in transpiled."""
    from text2sql_dspy.programs.bundled import ensure_bundled_database

    on_sqlite, on_postgres = open_source(ensure_bundled_database()), open_source(postgres.reader_url("saas"))
    assert database_key(on_postgres) == database_key(on_sqlite)
    mine = store.add_pair(on_sqlite, "How many users are there?", "SELECT count(*) FROM users")
    assert store.examples(on_postgres) == [mine]

    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(BUNDLED_DATA / "train.json", folder / "train.json")
    (folder / "databases.json").write_text(json.dumps({"saas": postgres.reader_url("saas")}))
    report = store.import_split(folder, "train", progress=False)
    assert report.added + report.unchanged + len(report.refused) == len(json.loads((folder / "train.json").read_text()))
    assert report.added > 100
    assert any(e.checked.startswith("ran read-only on postgres") for e in store.examples(on_postgres))
    # Refused: only gold queries PostgreSQL itself cannot run (SQLite's JULIANDAY, DATETIME, SUM over a comparison)
    assert all("invalid for database 'saas': database error: " in reason
               for _, _, reason in report.refused), report.refused
