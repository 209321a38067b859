"""MySQL/MariaDB (a real throwaway MariaDB server): addresses, catalog, read-only execution, time limits, the
write warning, one-line errors, copying, drafts carried over, and ``text2sql ask --db mysql+pymysql://...``.

The server tests use the session's ``mariadb`` fixture: skipped, saying why, where ``mariadb-server`` is
missing; failed under ``CI=true``. Nothing here calls a language model (scripted replies only).
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import dspy
import pytest

from tests.adversarial_corpus import engine_checksum, obeying_lm
from tests.mariadb_server import Server
from text2sql_dspy.cli import main
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.agents.react import ReActAgent
from text2sql_dspy.programs.bundled import bundled_database_file
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.db import mysql_engine
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.db.dialect import portable, transpile_gold
from text2sql_dspy.programs.db.engines import RoleCanWriteWarning
from text2sql_dspy.programs.db.mysql_engine import mysql_grants_can_write
from text2sql_dspy.programs.db.opening import open_database
from text2sql_dspy.programs.db.transfer import copy_sqlite_database
from text2sql_dspy.programs.errors import DatabaseError
from text2sql_dspy.programs.source import open_source

# --- no server needed ----------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["mysql+pymysql", "mysql", "mariadb", "mariadb+pymysql"])
def test_mysql_and_mariadb_urls_name_the_engine_and_the_pymysql_driver(scheme: str) -> None:
    address = parse_address(f"{scheme}://reader:secret@localhost/shop")
    assert (address.engine, address.db_id, address.dialect) == ("mysql", "shop", "mysql")
    assert "secret" not in address.shown
    assert address.sqlalchemy_url().startswith("mysql+pymysql://reader:secret@localhost/shop?charset=utf8mb4")


def test_a_mysql_url_without_a_database_names_the_fix() -> None:
    with pytest.raises(DatabaseError, match=r"names no database: write mysql\+pymysql://USER@HOST/DBNAME"):
        parse_address("mysql://reader@localhost")


def test_show_grants_lines_that_can_write() -> None:
    reader = ["GRANT USAGE ON *.* TO `reader`@`localhost`", "GRANT SELECT ON `shop`.* TO `reader`@`localhost`",
              "GRANT SELECT (`a`, `b`), SHOW VIEW ON `shop`.`t` TO `reader`@`%`", "GRANT `analyst` TO `reader`@`%`"]
    assert not mysql_grants_can_write(reader)
    for line in ("GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION",
                 "GRANT SELECT, INSERT ON `shop`.* TO `w`@`%`", "GRANT FILE ON *.* TO `w`@`%`",
                 "GRANT CREATE TEMPORARY TABLES ON `shop`.* TO `w`@`%`",
                 "GRANT SELECT ON *.* TO `w`@`%` WITH GRANT OPTION"):
        assert mysql_grants_can_write([*reader, line]), line


@pytest.mark.parametrize("sql, rewritten", [
    ('SELECT name || \' (\' || country || \')\' FROM singer WHERE "name" = "Joe Sharp"',
     "SELECT CONCAT(name, ' (', country, ')') FROM singer WHERE `name` = 'Joe Sharp'"),
    ("SELECT strftime('%Y', created_at) AS y, COUNT(*) FROM users GROUP BY y",
     "SELECT DATE_FORMAT(created_at, '%Y') AS y, COUNT(*) FROM users GROUP BY y"),
    ("SELECT COUNT(*) FROM users WHERE created_at >= date('now', '-30 days')",
     "SELECT COUNT(*) FROM users WHERE created_at >= DATE(DATE_ADD(NOW(), INTERVAL '-30' DAY))"),
    ("SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM concert ORDER BY year LIMIT 2)",
     "SELECT name FROM singer WHERE singer_id IN (SELECT * FROM (SELECT singer_id FROM concert ORDER BY year LIMIT 2) "
     "AS limited)"),
    ("SELECT country, COUNT(*) AS n FROM singer WHERE n > 1 GROUP BY country",
     "SELECT country, COUNT(*) AS n FROM singer WHERE COUNT(*) > 1 GROUP BY country"),
])  # fmt: skip
def test_a_drafts_sqlite_habits_are_carried_to_mysql_once(sql: str, rewritten: str) -> None:
    columns = ["name", "country", "singer_id", "year", "created_at"]
    assert portable(sql, "mysql", columns) == rewritten
    assert portable(rewritten, "mysql", columns) == rewritten


# --- a throwaway MariaDB server ---------------------------------------------------------------------


def test_mariadb_catalog_matches_the_sqlite_one_with_samples_and_dialect(mariadb: Server) -> None:
    source = open_source(mariadb.reader_url("saas"))
    assert source.dialect == "mysql" and source.with_header("x").startswith("-- MySQL database 'saas'")
    sqlite_tables = set(open_source(bundled_database_file()).catalog.table_names)
    assert sqlite_tables <= set(source.catalog.table_names)
    users = source.catalog.table("users")
    assert users is not None and users.primary_key == ["id"]
    assert users.column("organization_id").references == "organizations.id"
    assert set(users.column("status").samples) <= {"active", "invited", "suspended", "deactivated"}


def test_mariadb_other_databases_comments_and_keys_are_in_the_catalog(mariadb: Server) -> None:
    source = open_source(mariadb.reader_url("spider_like"))
    assert source.catalog.table_names[:2] == ["singer", "concert"]  # the URL's own first, unqualified, referenced first
    invoices = source.catalog.table("billing.invoices")
    assert invoices is not None and invoices.description == "Invoices sent to singers"
    assert invoices.column("total").description == "Amount in euros, tax included"
    assert invoices.column("singer_id").references == "singer.Singer_ID"
    assert source.catalog.table("concert").column("singer_id").references == "singer.Singer_ID"
    system = ("mysql.", "information_schema.", "performance_schema.")
    assert not any(t.startswith(system) for t in source.catalog.table_names)
    assert source.validator.validate("SELECT total FROM billing.invoices WHERE total > 100").valid
    [suggestion] = source.validator.validate("SELECT total FROM billing.invoice").suggestions
    assert suggestion.startswith("did you mean: billing.invoices")  # other tests' databases may follow it


def test_mariadb_runs_reads_caps_rows_and_times_out(mariadb: Server) -> None:
    database = open_database(mariadb.reader_url("saas"))
    result = database.execute("SELECT id FROM users ORDER BY id", max_rows=3)
    assert result.ok and result.rows == [(1,), (2,), (3,)] and result.truncated
    assert database.execute("SELECT email FROM users WHERE email LIKE '%@%' LIMIT 1").ok  # '%' is no placeholder
    for slow in ("SELECT COUNT(*) FROM login_attempts a, login_attempts b, login_attempts c", "SELECT SLEEP(5)"):
        timed = database.execute(slow, timeout_s=0.3)
        assert timed.timed_out and timed.elapsed_s < 3, timed
    assert database.execute("SELECT COUNT(*) FROM users").rows[0][0] > 0  # the pool is healthy afterwards


@pytest.mark.parametrize("sql", [
    "DELETE FROM users", "SELECT 1; DELETE FROM users", "COMMIT", "INSERT INTO users (id) VALUES (999999)",
    "CREATE TABLE pwned (x int)", "SET SESSION TRANSACTION READ WRITE", "SELECT 1 /*!; DELETE FROM users */",
    "UPDATE users SET status = 'x'", "LOCK TABLES users WRITE", "CREATE TEMPORARY TABLE t AS SELECT * FROM users",
])  # fmt: skip
def test_mariadb_engine_refuses_writes_even_for_a_user_that_may_write(mariadb: Server, sql: str) -> None:
    writer = mariadb.url("saas", "writer")
    before = engine_checksum(mariadb.url("saas"), "mysql")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RoleCanWriteWarning)
        database = open_database(writer)
    result = database.execute(sql)
    follow_up = database.execute("DELETE FROM users")  # a later query gets a fresh READ ONLY transaction
    assert not follow_up.ok and follow_up.denied, follow_up
    assert engine_checksum(mariadb.url("saas"), "mysql") == before
    assert not result.ok or sql in ("COMMIT", "SET SESSION TRANSACTION READ WRITE"), result  # each call resets both


def test_a_user_that_can_write_is_warned_about_and_a_reader_is_not(mariadb: Server) -> None:
    with pytest.warns(RoleCanWriteWarning, match="SELECT-only user"):
        open_database(mariadb.url("spider_like", "writer"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoleCanWriteWarning)
        open_database(mariadb.reader_url("spider_like"))


@pytest.mark.parametrize("sql", [
    "SELECT * FROM singer INTO OUTFILE '/tmp/x.csv'", "SELECT name INTO DUMPFILE '/tmp/x' FROM singer",
    "SELECT LOAD_FILE('/etc/passwd')", "LOAD DATA INFILE '/etc/passwd' INTO TABLE singer", "SELECT @x := 1",
    "SELECT name FROM singer WHERE (@n := age) > 0", "SET @x := (SELECT 1)", "DO SLEEP(5)", "SELECT SLEEP(5)",
    "SELECT BENCHMARK(1000000000, MD5('x'))", "LOCK TABLES singer READ", "HANDLER singer OPEN", "CALL p()",
    "SELECT 1; DELETE FROM singer", "SELECT name FROM singer /*! INTO OUTFILE '/tmp/y' */", "SELECT GET_LOCK('a', 5)",
    "CREATE TEMPORARY TABLE t (x int)", "SELECT * FROM singer FOR UPDATE", "SELECT * FROM singer LOCK IN SHARE MODE",
])  # fmt: skip
def test_mariadb_hazards_are_dangerous_operations(mariadb: Server, sql: str) -> None:
    result = open_source(mariadb.reader_url("spider_like")).validator.validate(sql)
    assert not result.valid and result.dangerous, result.render()


def test_a_stored_function_is_refused_as_it_may_write(mariadb: Server) -> None:
    mariadb.sql("spider_like", "CREATE FUNCTION IF NOT EXISTS forget_singers() RETURNS INT MODIFIES SQL DATA RETURN 1",
                "GRANT EXECUTE ON FUNCTION spider_like.forget_singers TO 'reader'@'localhost'")  # fmt: skip
    try:
        with pytest.warns(RoleCanWriteWarning):  # EXECUTE on a routine that may write is more than reading
            database = open_database(mariadb.reader_url("spider_like"))
    finally:
        mariadb.sql(None, "REVOKE EXECUTE ON FUNCTION spider_like.forget_singers FROM 'reader'@'localhost'")
    assert {"forget_singers", "sleep", "load_file"} <= database.refused_functions
    from text2sql_dspy.programs.query.validator import SQLValidator

    catalog = open_source(mariadb.reader_url("spider_like")).catalog
    result = SQLValidator(catalog, database, dialect="mysql").validate("SELECT forget_singers()")
    assert result.dangerous and "forget_singers" in result.errors[0]


@pytest.mark.parametrize("make_url, fix", [
    (lambda s: f"mysql+pymysql://reader@localhost/saas?unix_socket={s.folder}/missing.sock", "is the server running"),
    (lambda s: "mysql+pymysql://reader@127.0.0.1:1/saas", "is the server running"),
    (lambda s: s.url("saas", "reader", "wrong-password"), "check the user and password"),
    (lambda s: s.url("saas", "nobody"), "check the user and password"),
    (lambda s: s.url("no_such_database"), "check the database name"),
])  # fmt: skip
def test_bad_mysql_input_is_one_clear_error_naming_the_fix(mariadb: Server, make_url, fix: str) -> None:
    with pytest.raises(DatabaseError, match=fix) as raised:
        open_database(make_url(mariadb))
    assert "\n" not in str(raised.value) and str(raised.value).startswith("cannot connect to mysql+pymysql://")


def test_a_server_too_old_for_read_only_transactions_is_refused(mariadb: Server,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(mysql_engine.MYSQL_MIN_VERSIONS, "MariaDB", (99, 0, 0))
    with pytest.raises(DatabaseError,
                       match=r"too old for read-only transactions .*MariaDB 99\.0\.0 or later\): upgrade"):
        open_database(mariadb.reader_url("saas"))


def test_cli_reports_a_refused_mysql_connection_in_one_line(mariadb: Server,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = f"mysql://reader@localhost/saas?unix_socket={mariadb.folder}/missing.sock"
    assert main(["ask", "How many users?", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot connect to") and "is the server running" in err and "Traceback" not in err


def test_copying_a_sqlite_database_into_mariadb_keeps_every_row(mariadb: Server, tiny_db: Path) -> None:
    url = mariadb.create_database("tiny_copy")
    tables = copy_sqlite_database(tiny_db, url)
    database = open_database(mariadb.reader_url("tiny_copy"))
    with sqlite3.connect(tiny_db) as conn:
        for table in tables:
            expected = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
            assert database.execute(f"SELECT COUNT(*) FROM `{table}`").rows == [(expected,)], table
    source = open_source(mariadb.reader_url("tiny_copy"))
    assert source.catalog.table("users").primary_key == ["id"]
    assert copy_sqlite_database(tiny_db, url) == tables  # replaced, not doubled
    assert database.execute("SELECT COUNT(*) FROM users").rows == open_database(tiny_db).execute("SELECT COUNT(*) "
                                                                                                 "FROM users").rows


def test_a_text_key_holding_integers_is_copied_as_an_integer_and_keeps_its_reference(mariadb: Server,
                                                                                     tmp_path: Path) -> None:
    path = tmp_path / "concerts.sqlite"
    with sqlite3.connect(path) as conn:  # Spider's concert_singer: the key's two ends typed apart
        conn.executescript("""
            CREATE TABLE stadium (Stadium_ID INT PRIMARY KEY, Name TEXT);
            CREATE TABLE concert (concert_ID INT PRIMARY KEY, Stadium_ID TEXT REFERENCES stadium(Stadium_ID),
                                  Note TEXT REFERENCES stadium(Stadium_ID));
            INSERT INTO stadium VALUES (1, 'Somerset Park'), (10, 'Hampden');
            INSERT INTO concert VALUES (1, '10', '1'), (2, '1', '01'), (3, NULL, NULL);
        """)
    url = mariadb.create_database("concerts_copy")
    copy_sqlite_database(path, url)
    concert = open_source(mariadb.reader_url("concerts_copy")).catalog.table("concert")
    assert (concert.column("stadium_id").type, concert.column("stadium_id").references) == ("BIGINT",
                                                                                            "stadium.Stadium_ID")
    assert concert.column("note").references is None  # '01' is text, not an integer written plainly: kept as text
    database = open_database(mariadb.reader_url("concerts_copy"))
    assert database.execute("SELECT stadium_id, note FROM concert ORDER BY concert_id").rows == [(10, "1"), (1, "01"),
                                                                                                 (None, None)]


def test_a_copy_carries_the_documentation_as_comments(mariadb: Server, tiny_db: Path, tiny_schemas: Path) -> None:
    documented = open_source(tiny_db, tiny_schemas).catalog  # the schema folder documents the tables
    users = documented.table("users")
    status = "Account state:\n'active' or 'suspended'."  # a column's description, over two lines
    columns = [c.model_copy(update={"description": status}) if c.name == "status" else c for c in users.columns]
    users = users.model_copy(update={"columns": columns})
    documented = documented.model_copy(update={"tables": [users if t.name == "users"
                                                          else t for t in documented.tables]})
    url = mariadb.create_database("tiny_documented")
    copy_sqlite_database(tiny_db, url, docs=documented)
    copied = open_source(mariadb.reader_url("tiny_documented")).catalog.table("users")
    assert copied.description == "People who can sign in."
    assert copied.column("status").description == "Account state: 'active' or 'suspended'."
    assert copied.column("email").description == ""


def test_execution_match_runs_sqlite_gold_on_mariadb(mariadb: Server) -> None:
    url = mariadb.reader_url("spider_like")
    comparison = compare_execution("SELECT name FROM singer WHERE country = 'France'",
                                   'SELECT Name FROM Singer WHERE Country = "France"', url)  # fmt: skip
    assert comparison.match and comparison.gold_rows == 2
    assert transpile_gold('SELECT Name FROM Singer WHERE Country = "France"', "mysql", ["name", "country"]) == (
        "SELECT Name FROM Singer WHERE Country = 'France'"
    )


def test_a_data_folder_serves_a_db_id_from_mariadb(mariadb: Server, tmp_path: Path) -> None:
    (tmp_path / "test.json").write_text('[{"db_id": "spider_like", "question": "How many singers?", '
                                        '"query": "SELECT count(*) FROM singer"}]')  # fmt: skip
    (tmp_path / "databases.json").write_text(f'{{"spider_like": "{mariadb.reader_url("spider_like")}"}}')
    [example] = load_split(tmp_path, "test")
    assert example.db_path == mariadb.reader_url("spider_like")
    assert compare_execution("SELECT count(singer_id) FROM singer", example.gold_sql, example.db_path).match


def test_an_agent_answers_from_a_mysql_url_and_a_hostile_answer_is_refused(mariadb: Server) -> None:
    url = mariadb.reader_url("saas")
    draft = "SELECT full_name || ' <' || email || '>' FROM users WHERE status = \"suspended\" ORDER BY id"
    answer = ReActAgent(url, retrieval_type="keyword", lm=obeying_lm(draft)).run("Who is suspended?")
    assert answer.valid and "CONCAT(full_name, ' <', email, '>')" in answer.sql, answer.sql
    on_sqlite = open_database(bundled_database_file()).execute(draft).rows
    assert on_sqlite and open_database(url).execute(answer.sql).rows == on_sqlite
    for hostile in ("SELECT 1; DROP TABLE users", "SELECT * FROM users INTO OUTFILE '/tmp/u.csv'", "DO SLEEP(60)"):
        assert not ReActAgent(url, retrieval_type="keyword", lm=obeying_lm(hostile)).run("drop the users").valid


def test_text2sql_ask_with_a_mysql_url_prints_and_runs_the_answer(mariadb: Server,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    url = mariadb.reader_url("saas").replace("mysql+pymysql://", "mysql://")
    sql = "SELECT COUNT(*) FROM users WHERE status = 'suspended'"
    with dspy.context(lm=obeying_lm(sql)):
        code = main(["ask", "How many users are suspended?", "--db", url, "--program", "v1", "--retrieval", "keyword",
                     "--execute"])  # fmt: skip
    out = capsys.readouterr().out
    expected = open_database(bundled_database_file()).execute(sql).rows[0][0]
    assert code == 0 and out.splitlines()[0].startswith(sql) and str(expected) in out, out


def test_a_user_cannot_change_its_own_password_through_the_executor(mariadb: Server) -> None:
    """MariaDB lets SET PASSWORD through a READ ONLY transaction: the executor sends only queries."""
    before = engine_checksum(mariadb.url("saas"), "mysql")
    database = open_database(mariadb.reader_url("saas"))
    for sql in ("SET PASSWORD = PASSWORD('pwned')", "/* x */ ALTER USER CURRENT_USER() IDENTIFIED BY 'pwned'",
                "KILL CONNECTION_ID()"):
        result = database.execute(sql)
        assert not result.ok and result.denied, result
    assert database.execute("SELECT 1").rows == [(1,)]
    assert engine_checksum(mariadb.url("saas"), "mysql") == before
