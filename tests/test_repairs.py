"""Issue 81's mechanical repairs (:mod:`~text2sql_dspy.programs.query.repairs` and
:mod:`~text2sql_dspy.programs.query.dialect_repair`), as tables of cases: a refused query in, its repaired readings
out (or none); the bundled database's two cases validated and run; and ``benchmarks/repair_firings.py`` on a
two-record file."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import duckdb
import pytest

from tests.scripts import script
from text2sql_dspy import bundled_database
from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.query.dialect_repair import DIALECT, Repair, dialect_readings, dialect_repair
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.repairs import AMBIGUOUS, JOIN, NEAR, OTHER, TABLE, repairs
from text2sql_dspy.programs.query.validator import SQLValidator
from text2sql_dspy.programs.source import open_source

firings = script("benchmarks/repair_firings.py")


def _table(name: str, *columns: str, keys: dict[str, str] | None = None) -> Table:
    keys = keys or {}
    return Table(name=name, columns=[Column(name=c, primary_key=i == 0 and c.endswith("id") and c not in keys,
                                            references=keys.get(c)) for i, c in enumerate(columns)])


CATALOG = Catalog(db_id="shop", tables=[
    _table("customers", "customer_id", "name", "city"),
    _table("orders", "order_id", "customer_id", "total", "address_line1", "address_line2", "max_speed",
           keys={"customer_id": "customers.customer_id"}),
    _table("shipments", "shipment_id", "order_id", "city", "shipped_at", keys={"order_id": "orders.order_id"}),
    _table("race", "id", "year", "name"),
    _table("driver", "id", "name", "years"),
    _table("users", "id", "name", "email", "country_code", keys={"country_code": "country.code"}),
    Table(name="country", columns=[Column(name="code", primary_key=True), Column(name="label")]),
    _table("visits", "id", "user_id", "visits", "name", keys={"user_id": "users.id"}),
    _table("login_attempts", "id", "user_id", "success", "attempted_at", keys={"user_id": "users.id"}),
    Table(name="savings", columns=[Column(name="custid", primary_key=True, references="users.id"),
                                   Column(name="balance", type="REAL")]),
])


def _repairs(sql: str) -> list[Repair]:
    """What :func:`repairs` makes of ``sql`` refused by the validator over :data:`CATALOG` (its names only)."""
    check = SQLValidator(CATALOG).validate(sql)
    assert not check.valid, check
    return repairs(check.sql, check.findings, CATALOG, "sqlite")


@pytest.mark.parametrize(("sql", "kind", "expected"), [
    # near name: a digit suffix the table lacks; one edit
    ("SELECT T1.order_id1 FROM orders AS T1", NEAR, ["SELECT T1.order_id FROM orders AS T1"]),
    ("SELECT totl FROM orders", NEAR, ["SELECT total FROM orders"]),
    ("SELECT T1.total FROM orders AS T1 ORDER BY T1.totall DESC", NEAR,
     ["SELECT T1.total FROM orders AS T1 ORDER BY T1.total DESC"]),
    # two equally close: each a reading, none chosen
    ("SELECT T1.address_line FROM orders AS T1", NEAR,
     ["SELECT T1.address_line1 FROM orders AS T1", "SELECT T1.address_line2 FROM orders AS T1"]),
    # other table: the same name on another table of the FROM (two of them: two readings)
    ("SELECT T1.city FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.customer_id "
     "JOIN shipments AS T3 ON T3.order_id = T1.order_id", OTHER,
     ["SELECT T2.city FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.customer_id "
      "JOIN shipments AS T3 ON T3.order_id = T1.order_id",
      "SELECT T3.city FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.customer_id "
      "JOIN shipments AS T3 ON T3.order_id = T1.order_id"]),
    # table as column: counted, joined along the declared key; bare, a correlated count; one row per row: read
    ("SELECT T1.name, COUNT(T1.failed_login_attempts) AS n FROM users AS T1 GROUP BY T1.id ORDER BY n DESC", TABLE,
     ["SELECT T1.name, COUNT(T2.id) AS n FROM users AS T1 JOIN login_attempts AS T2 ON T2.user_id = T1.id "
      "GROUP BY T1.id ORDER BY n DESC"]),
    ("SELECT name, login_attempts FROM users", TABLE,
     ["SELECT name, (SELECT COUNT(*) FROM login_attempts WHERE login_attempts.user_id = users.id) AS login_attempts "
      "FROM users"]),
    ("SELECT name, savings FROM users ORDER BY savings DESC LIMIT 3", TABLE,
     ["SELECT name, savings.balance FROM users JOIN savings ON savings.custid = users.id "
      "ORDER BY savings.balance DESC LIMIT 3"]),
    ("SELECT visits FROM users WHERE name = 'Ann' ORDER BY VISITS", TABLE,  # the named table's column of that name
     # is read; users' name, which visits has too, qualified
     ["SELECT visits.visits FROM users JOIN visits ON visits.user_id = users.id WHERE users.name = 'Ann' "
      "ORDER BY visits.visits"]),
    ("SELECT T1.name, T1.country FROM users AS T1", TABLE,  # a lookup the row refers to: its one column
     ["SELECT T1.name, T2.label FROM users AS T1 JOIN country AS T2 ON T2.code = T1.country_code"]),
    # ambiguous: the table a declared key gives it in the join; else each table, as its own reading
    ("SELECT T1.total FROM orders AS T1 JOIN shipments AS T2 ON T2.order_id = order_id", AMBIGUOUS,
     ["SELECT T1.total FROM orders AS T1 JOIN shipments AS T2 ON T2.order_id = T1.order_id"]),
    ("SELECT city FROM customers AS T1 JOIN orders AS T2 ON T1.customer_id = T2.customer_id "
     "JOIN shipments AS T3 ON T3.order_id = T2.order_id", AMBIGUOUS,
     ["SELECT T1.city FROM customers AS T1 JOIN orders AS T2 ON T1.customer_id = T2.customer_id "
      "JOIN shipments AS T3 ON T3.order_id = T2.order_id",
      "SELECT T3.city FROM customers AS T1 JOIN orders AS T2 ON T1.customer_id = T2.customer_id "
      "JOIN shipments AS T3 ON T3.order_id = T2.order_id"]),
    # missing join: a column of a table one declared key away, joined and read; a lookup first, never the key itself
    ("SELECT T1.shipped_at FROM orders AS T1 WHERE T1.total > 10", JOIN,
     ["SELECT T2.shipped_at FROM orders AS T1 JOIN shipments AS T2 ON T2.order_id = T1.order_id WHERE T1.total > 10"]),
    ("SELECT total FROM shipments WHERE shipped_at > '2024'", JOIN,
     ["SELECT orders.total FROM shipments JOIN orders ON orders.order_id = shipments.order_id "
      "WHERE shipped_at > '2024'"]),
    ("SELECT total, customer_id FROM shipments WHERE shipped_at > '2024'", JOIN,  # two names, one join
     ["SELECT orders.total, orders.customer_id FROM shipments JOIN orders ON orders.order_id = shipments.order_id "
      "WHERE shipped_at > '2024'"]),
    ("SELECT T1.email FROM users AS T1 WHERE T1.label = 'France'", JOIN,
     ["SELECT T1.email FROM users AS T1 JOIN country AS T2 ON T2.code = T1.country_code WHERE T2.label = 'France'"]),
])
def test_names_are_repaired(sql: str, kind: str, expected: list[str]) -> None:
    found = _repairs(sql)
    assert [r.sql for r in found] == expected
    assert {r.kind for r in found} == {kind}
    assert all(r.changes for r in found)
    assert all(SQLValidator(CATALOG).validate(r.sql).valid for r in found)


@pytest.mark.parametrize("sql", [
    "SELECT T1.address_line3 FROM orders AS T1",  # line3 -> line1 changes a number
    "SELECT T1.years FROM race AS T1",  # years -> year: 'years' is a word of the schema (driver.years)
    "SELECT T1.min_speed FROM orders AS T1",  # max_speed is two edits away, and another word
    "SELECT T1.login_attempts_id FROM users AS T1",  # a column of login_attempts (its id), not its rows
    "SELECT T1.name FROM customers AS T1 JOIN shipments AS T2 ON T1.customer_id = T2.customer_id",
    # T2.customer_id -> T1.customer_id would join a table with itself: ON T1.customer_id = T1.customer_id
    "SELECT T1.name, T1.nothing_like_it FROM users AS T1",  # no fix for one name: no reading
    "SELECT T1.name FROM customers AS T1 WHERE T1.shipped_at > '2024'",  # shipments is two keys away: no join
])
def test_names_that_are_not_repaired(sql: str) -> None:
    assert _repairs(sql) == []


def test_the_cap_and_the_kinds_decide() -> None:
    assert len(repairs("SELECT T1.address_line FROM orders AS T1", [
        Finding(kind=Kind.UNKNOWN_COLUMN, message="x", where="T1.address_line")], CATALOG, "sqlite", cap=1)) == 1
    # a finding of another kind (a warning, an unknown table) is no reason to touch a name
    assert repairs("SELECT totl FROM orders", [Finding(kind=Kind.UNKNOWN_TABLE, message="x", where="orders")],
                   CATALOG, "sqlite") == []


# --------------------------------------------------------------------------- dialect

DIALECT_CASES = [
    ("sqlite", "SELECT EXTRACT(HOUR FROM ts) FROM t", "SELECT CAST(STRFTIME('%H', ts) AS INTEGER) FROM t"),
    ("sqlite", "SELECT DATE_PART('hour', ts) FROM t", "SELECT CAST(STRFTIME('%H', ts) AS INTEGER) FROM t"),
    ("sqlite", "SELECT name FROM t WHERE name ILIKE '%AB%'", "SELECT name FROM t WHERE LOWER(name) LIKE LOWER('%AB%')"),
    ("sqlite", "SELECT TOP 2 name FROM t ORDER BY x DESC", "SELECT name FROM t ORDER BY x DESC LIMIT 2"),
    ("sqlite", "SELECT ISNULL(name, 'none') FROM t", "SELECT COALESCE(name, 'none') FROM t"),
    ("sqlite", "SELECT DATEDIFF(day, a, b) FROM t", "SELECT CAST((JULIANDAY(b) - JULIANDAY(a)) AS INTEGER) FROM t"),
    ("sqlite", "SELECT CONCAT(name, ' ', a) FROM t", "SELECT COALESCE(name, '') || ' ' || COALESCE(a, '') FROM t"),
    ("postgres", "SELECT TOP 2 name FROM t ORDER BY x DESC", "SELECT name FROM t ORDER BY x DESC NULLS LAST LIMIT 2"),
    ("postgres", "SELECT ISNULL(name, 'none') FROM t", "SELECT COALESCE(name, 'none') FROM t"),
    ("postgres", "SELECT IFNULL(x, 0) FROM t", "SELECT COALESCE(x, 0) FROM t"),
    ("postgres", "SELECT STRFTIME('%Y', ts) FROM t", "SELECT TO_CHAR(CAST(ts AS TIMESTAMP), 'YYYY') FROM t"),
    ("postgres", "SELECT DATEDIFF(day, a, b) FROM t",
     "SELECT CAST(EXTRACT(epoch FROM CAST(CAST(b AS TIMESTAMP) AS TIMESTAMP) - CAST(CAST(a AS TIMESTAMP) AS TIMESTAMP))"
     " / 86400 AS BIGINT) FROM t"),
    ("mysql", "SELECT TOP 2 name FROM t ORDER BY x DESC", "SELECT name FROM t ORDER BY x DESC LIMIT 2"),
    ("mysql", "SELECT name FROM t WHERE name ILIKE '%AB%'", "SELECT name FROM t WHERE LOWER(name) LIKE LOWER('%AB%')"),
    ("mysql", "SELECT ISNULL(name, 'none') FROM t", "SELECT COALESCE(name, 'none') FROM t"),  # MySQL reads no 'none'
    ("mysql", "SELECT DATE_PART('hour', ts) FROM t", "SELECT EXTRACT(HOUR FROM ts) FROM t"),
    ("mysql", "SELECT DATEDIFF(day, a, b) FROM t", "SELECT DATEDIFF(CAST(b AS DATETIME), CAST(a AS DATETIME)) FROM t"),
    ("sqlite", "SELECT EXTRACT(QUARTER FROM ts) FROM t",
     "SELECT ((CAST(STRFTIME('%m', ts) AS INTEGER) + 2) / 3) FROM t"),
    ("sqlite", "SELECT x FROM t WHERE ts <= CURRENT_TIMESTAMP - INTERVAL 2 HOUR",
     "SELECT x FROM t WHERE ts <= DATETIME(CURRENT_TIMESTAMP, '-2 hours')"),
    ("sqlite", "SELECT x FROM t WHERE NOW() - INTERVAL '2 hours' BETWEEN ts AND NOW()",
     "SELECT x FROM t WHERE DATETIME(CURRENT_TIMESTAMP, '-2 hours') BETWEEN ts AND CURRENT_TIMESTAMP"),
    ("sqlite", "SELECT DATE_ADD(ts, INTERVAL 90 MINUTE) FROM t", "SELECT DATETIME(ts, '+90 minutes') FROM t"),
    ("sqlite", "SELECT DATE_SUB(CURRENT_DATE, INTERVAL 1 WEEK) FROM t", "SELECT DATE(CURRENT_DATE, '-7 days') FROM t"),
    ("sqlite", "SELECT ts + INTERVAL x DAY FROM t", "SELECT DATETIME(ts, x || ' days') FROM t"),
    ("duckdb", "SELECT TOP 2 name FROM t ORDER BY x DESC", "SELECT name FROM t ORDER BY x DESC LIMIT 2"),
    ("duckdb", "SELECT ISNULL(name, 'none') FROM t", "SELECT COALESCE(name, 'none') FROM t"),
    ("duckdb", "SELECT DATEDIFF(day, a, b) FROM t", "SELECT DATE_DIFF('DAY', a, b) FROM t"),
    ("duckdb", "SELECT CAST(GETDATE() AS DATE)", "SELECT CAST(CURRENT_TIMESTAMP AS DATE)"),
]


@pytest.mark.parametrize(("dialect", "sql", "expected"), DIALECT_CASES)
def test_a_query_is_written_for_its_dialect(dialect: str, sql: str, expected: str) -> None:
    repair = dialect_repair(sql, dialect)
    assert repair is not None and repair.sql == expected
    assert repair.kind == DIALECT and repair.changes


@pytest.mark.parametrize(("dialect", "sql"), [
    ("sqlite", "SELECT a || b FROM t WHERE x = 1"),  # nothing SQLite lacks: MySQL's reading (OR) is not taken
    ("sqlite", "SELECT DATEDIFF(week, a, b) FROM t"),  # every reading writes with sqlglot's unsupported warning
    ("sqlite", "SELECT EXTRACT(WEEK FROM ts) FROM t"),  # no STRFTIME field is EXTRACT's WEEK
    ("sqlite", "SELECT ts + INTERVAL 3 MICROSECOND FROM t"),  # no modifier of SQLite's counts microseconds
    ("sqlite", "SELECT name FROM t"),
])
def test_a_transpile_that_would_change_the_meaning_is_refused(dialect: str, sql: str) -> None:
    assert dialect_readings(sql, dialect) == []


def test_each_field_of_extract_is_said() -> None:
    repair = dialect_repair("SELECT EXTRACT(YEAR FROM ts), EXTRACT(QUARTER FROM ts), EXTRACT(YEAR FROM a) FROM t",
                            "sqlite")
    assert repair is not None and repair.changes == ("EXTRACT(YEAR FROM ...) written for SQLite",
                                                     "EXTRACT(QUARTER FROM ...) written for SQLite")


def test_a_function_two_dialects_read_apart_gives_two_readings() -> None:
    """CONCAT ignores NULLs in PostgreSQL and SQLite 3.44 and gives NULL in MySQL: both, SQLite's own first."""
    assert [r.sql for r in dialect_readings("SELECT CONCAT(name, ' ', a) FROM t", "sqlite")] == [
        "SELECT COALESCE(name, '') || ' ' || COALESCE(a, '') FROM t", "SELECT name || ' ' || a FROM t"]


ROWS = [("2024-03-01 13:04:05", "Abby", "2024-03-01", "2024-03-04", 3), ("2024-03-02 07:00:00", None, None, None, 1)]


@pytest.mark.parametrize(("dialect", "sql", "expected"),
                         [case for case in DIALECT_CASES if case[0] in ("sqlite", "duckdb")])
def test_the_written_query_runs_on_its_engine(dialect: str, sql: str, expected: str) -> None:
    if dialect == "sqlite":
        connection = sqlite3.connect(":memory:")
        connection.execute("CREATE TABLE t (ts TEXT, name TEXT, a TEXT, b TEXT, x INTEGER)")
        connection.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
        if "CONCAT" not in sql or sqlite3.sqlite_version_info < (3, 44):  # SQLite 3.44 has CONCAT
            with pytest.raises(sqlite3.Error):
                connection.execute(sql).fetchall()  # as drafted, the engine refuses it
        rows = connection.execute(expected).fetchall()
    else:
        connection = duckdb.connect()
        connection.execute("CREATE TABLE t (ts TIMESTAMP, name TEXT, a DATE, b DATE, x INTEGER)")
        connection.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
        with pytest.raises(duckdb.Error):
            connection.execute(sql).fetchall()
        rows = connection.execute(expected).fetchall()
    assert rows
    if "HOUR FROM" in sql or "DATE_PART" in sql:
        assert sorted(rows) == [(7,), (13,)]
    if "QUARTER" in sql:
        assert rows == [(1,), (1,)]
    if "90 MINUTE" in sql:
        assert rows == [("2024-03-01 14:34:05",), ("2024-03-02 08:30:00",)]
    if "INTERVAL x DAY" in sql:
        assert rows == [("2024-03-04 13:04:05",), ("2024-03-03 07:00:00",)]


# --------------------------------------------------------------------------- the bundled database

HOUR_GOLD = ("SELECT strftime('%H', attempted_at) AS hour, COUNT(*) AS failed FROM login_attempts WHERE success = 0 "
             "GROUP BY hour ORDER BY failed DESC, hour LIMIT 1")


@pytest.fixture(scope="module")
def saas():
    return open_source(bundled_database())


def test_the_failed_logins_hour_is_read_with_strftime_on_sqlite(saas) -> None:
    """"What hour of the day (UTC) sees the most failed login attempts...": drafts wrote EXTRACT(HOUR FROM ...)."""
    draft = ("SELECT EXTRACT(HOUR FROM attempted_at) AS hour, COUNT(*) AS failed FROM login_attempts WHERE success = 0 "
             "GROUP BY hour ORDER BY failed DESC, hour LIMIT 1")
    check = saas.validator.validate(draft)
    assert [f.kind for f in check.findings if f.is_error] == [Kind.DATABASE_ERROR]  # near "FROM": syntax error
    (repair,) = repairs(check.sql, check.findings, saas.catalog, saas.dialect)
    assert repair.kind == DIALECT and "STRFTIME('%H', attempted_at)" in repair.sql
    assert saas.validator.validate(repair.sql).valid
    ran, gold = saas.database.execute(repair.sql), saas.database.execute(HOUR_GOLD)
    assert ran.ok and ran.rows[0][0] == int(gold.rows[0][0]) and ran.rows[0][1] == gold.rows[0][1]


@pytest.mark.parametrize("draft", [
    "SELECT T1.full_name, T1.email, COUNT(T1.failed_login_attempts) AS failed FROM users AS T1 LEFT JOIN blocks AS T2 "
    "ON T1.id = T2.user_id WHERE T2.user_id IS NULL GROUP BY T1.id ORDER BY failed DESC LIMIT 10",
    "SELECT T1.full_name, T1.email, T1.failed_login_attempts FROM users AS T1 WHERE NOT EXISTS (SELECT 1 FROM blocks "
    "AS T2 WHERE T2.user_id = T1.id) ORDER BY T1.failed_login_attempts DESC LIMIT 10",
])
def test_failed_login_attempts_on_users_counts_the_login_attempts_rows(saas, draft: str) -> None:
    """"Find the top 10 users by failed login attempts...": drafts counted T1.failed_login_attempts, which users lacks;
    login_attempts refers to users by its user_id."""
    check = saas.validator.validate(draft)
    assert [f.kind for f in check.findings if f.is_error] == [Kind.UNKNOWN_COLUMN]
    (repair,) = repairs(check.sql, check.findings, saas.catalog, saas.dialect)
    assert repair.kind == TABLE and "'failed' not applied" in repair.changes[0]
    assert "login_attempts" in repair.sql and ".user_id = T1.id" in repair.sql
    assert saas.validator.validate(repair.sql).valid
    ran = saas.database.execute(repair.sql, timeout_s=120)  # a correlated count: seconds on a loaded machine
    counts = dict(saas.database.execute("SELECT user_id, COUNT(*) FROM login_attempts GROUP BY user_id").rows)
    emails = dict(saas.database.execute("SELECT email, id FROM users").rows)
    assert ran.ok and len(ran.rows) == 10 and all(row[2] == counts[emails[row[1]]] for row in ran.rows)


@pytest.mark.parametrize(("draft", "change", "joined"), [
    # "Which webhooks belong to organizations that are past due?": organizations has no status; of the three tables
    # that have one and refer to it, subscriptions' samples hold 'past_due'
    ("SELECT w.id, w.url, o.name FROM webhooks w JOIN organizations o ON w.organization_id = o.id "
     "WHERE o.status = 'past_due'", "`o.status` → `subscriptions.status`",
     "JOIN subscriptions ON subscriptions.organization_id = o.id WHERE subscriptions.status = 'past_due'"),
    # "How much API overage has been billed in total, per currency?": the currency is the invoice's
    ("SELECT SUM(amount_cents) / 100 AS total, currency FROM invoice_items WHERE item_type = 'overage' "
     "GROUP BY currency", "`currency` → `invoices.currency`",
     "FROM invoice_items JOIN invoices ON invoices.id = invoice_items.invoice_id"),
])
def test_a_column_of_an_unread_table_is_joined_along_its_key(saas, draft: str, change: str, joined: str) -> None:
    check = saas.validator.validate(draft)
    assert [f.kind for f in check.findings if f.is_error] == [Kind.UNKNOWN_COLUMN]
    first, *_ = repairs(check.sql, check.findings, saas.catalog, saas.dialect)
    assert first.kind == JOIN and first.changes[0].startswith(change) and joined in first.sql
    assert saas.validator.validate(first.sql).valid and saas.database.execute(first.sql).ok


# --------------------------------------------------------------------------- benchmarks/repair_firings.py

def test_repair_firings_counts_what_fires_validates_and_is_right(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "database" / "shop"
    folder.mkdir(parents=True)
    connection = sqlite3.connect(folder / "shop.sqlite")
    connection.executescript("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, total REAL);"
                             "INSERT INTO orders VALUES (1, 9.5), (2, 20.0), (3, 4.25);")
    connection.commit()
    connection.close()
    reading = lambda sql: {"sql": sql, "valid": False, "findings": []}  # noqa: E731
    records = [
        {"db_id": "shop", "index": 0, "question": "What are the orders' totals?", "gold": "SELECT total FROM orders",
         "scoring": "spider", "answer": {"sql": "", "readings": [reading("SELECT totl FROM orders")]},
         "readings_correct": [False]},
        {"db_id": "shop", "index": 1, "question": "What is the largest total?",
         "gold": "SELECT total FROM orders ORDER BY total DESC LIMIT 1", "scoring": "spider",
         "answer": {"sql": "", "readings": [reading("SELECT TOP 1 total FROM orders ORDER BY total DESC")]},
         "readings_correct": [False]},
        {"db_id": "shop", "index": 2, "question": "List the totals.", "gold": "SELECT total FROM orders",
         "scoring": "spider", "answer": {"sql": "SELECT order_id FROM orders", "readings": [
             {**reading("SELECT order_id FROM orders"), "valid": True}, reading("SELECT totl FROM orders")]},
         "readings_correct": [False, False]},  # a valid reading, wrong; the refused one's repair is right
    ]
    file = tmp_path / "collected.jsonl.gz"
    with gzip.open(file, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(record) + "\n" for record in records)
    assert firings.main([str(file), "--data-root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("3 questions; 3 readings refused")
    table = {line[:16].strip(): line[16:].split() for line in lines[3:10]}
    assert table[DIALECT] == ["1", "1", "1", "1"] and table[NEAR] == ["2", "2", "2", "2"]
    assert table[OTHER] == table[TABLE] == table[AMBIGUOUS] == table[JOIN] == ["0", "0", "0", "0"]
    assert table["all"] == ["3", "3", "3"]
    assert lines[-2] == "answers whose every reading is refused: 2; a repair fired on 2, made 2 answerable and 2 right"
    assert lines[-1].startswith("answers with a valid reading, none right") and lines[-1].endswith(
        ": 1; a repaired reading of a refused one is right on 1")


def test_repair_firings_refuses_a_held_out_set(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="held-out"):
        firings.main([str(tmp_path / "spider-public" / "x.jsonl.gz"), "--data-root", str(tmp_path)])


# The agent: a draft the model keeps wrong, mended without a model call; nothing mendable, the closest reading kept.

def _agent(tiny_db, tiny_schemas, replies):  # noqa: ANN001, ANN202
    from tests.fakes import logprob_lm
    from text2sql_dspy.programs.agents.react import ReActAgent

    return ReActAgent(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=logprob_lm(replies),
                      max_repair_steps=0)


@pytest.mark.parametrize(("drafted", "mended", "change"), [
    ("SELECT count(*) FROM users WHERE status1 = 'suspended'",
     "WHERE status = 'suspended'", "status1"),
    ("SELECT T1.full_name FROM users AS T1 ORDER BY T1.login_attempts DESC LIMIT 1", "login_attempts",
     "login_attempts"),
])
def test_a_refused_draft_is_mended_before_any_redraft_in_one_call(tiny_db, tiny_schemas, drafted, mended,
                                                                   change) -> None:  # noqa: ANN001
    from tests.fakes import scripted_draft

    program = _agent(tiny_db, tiny_schemas, [scripted_draft(drafted, 0.8), scripted_draft(drafted, 0.8)])
    answer = program.run("Which user has the most login attempts?" if "login" in change else
                         "How many users are suspended?")
    assert answer.metrics.lm_calls == 1 and answer.metrics.redrafts == 0  # today: a redraft, a second call
    assert answer.valid and mended in answer.sql and answer.sql != drafted
    chosen = answer.chosen
    assert chosen.generator == "repair" and any(f.kind == "repaired" and change in f.message for f in chosen.findings)
    assert [s.kind for s in answer.steps if s.kind in ("draft", "repair", "redraft")] == ["draft", "repair"]
    assert answer.verdict != "likely right"


def test_nothing_mendable_keeps_the_closest_reading_unrun_for_a_person(tiny_db, tiny_schemas, capsys) -> None:  # noqa: ANN001
    from tests.fakes import scripted_draft
    from text2sql_dspy.programs.answer import Status

    bad = "SELECT count(*) FROM users WHERE colour = 'red'"
    program = _agent(tiny_db, tiny_schemas, [scripted_draft(bad, 0.8), scripted_draft(bad, 0.8)])
    answer = program.run("How many users are red?")
    assert answer.status is Status.FAILED and not answer.sql
    assert answer.chosen is not None and answer.chosen.sql == bad and not answer.chosen.valid
    assert answer.chosen.preview is None and "colour" in answer.reason
    assert "repair step limit" not in answer.reason, "no repair loop ran (V2's default): the findings say why"
    assert "did not submit" not in answer.reason and answer.reason.startswith("no query passed the validator (")
