"""PostgreSQL (a real throwaway server) and DuckDB (a file): addresses, catalog, read-only execution, validator.

The PostgreSQL tests use the session's ``postgres`` fixture and are skipped, saying why, only where the
server binaries are missing. The DuckDB tests need no server.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest

from tests.adversarial_corpus import engine_checksum, obeying_lm
from tests.postgres_server import Server
from text2sql_dspy.cli import main
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.agents.react import ReActAgent
from text2sql_dspy.programs.bundled import bundled_database_file
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.db.dialect import portable, transpile_gold
from text2sql_dspy.programs.db.engines import RoleCanWriteWarning
from text2sql_dspy.programs.db.opening import open_database
from text2sql_dspy.programs.db.transfer import copy_sqlite_database
from text2sql_dspy.programs.errors import DatabaseError
from text2sql_dspy.programs.source import open_source


@pytest.fixture(scope="module")
def bundled_sqlite_catalog():
    from text2sql_dspy.programs.bundled import ensure_bundled_database

    return open_source(ensure_bundled_database()).catalog


RUNAWAY = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


# --- addresses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "engine", "db_id", "dialect"),
    [
        ("data/x.sqlite", "sqlite", "x", "sqlite"),
        ("sqlite:///data/x.sqlite", "sqlite", "x", "sqlite"),
        ("duckdb:////tmp/w/shop.duckdb", "duckdb", "shop", "duckdb"),
        ("/tmp/w/shop.duckdb", "duckdb", "shop", "duckdb"),
        ("postgresql://reader:secret@db.example:5433/sales", "postgresql", "sales", "postgres"),
        ("postgres://reader@/sales?host=/run/postgresql", "postgresql", "sales", "postgres"),
    ],
)
def test_addresses_name_their_engine_database_and_dialect(target: str, engine: str, db_id: str, dialect: str) -> None:
    address = parse_address(target)
    assert (address.engine, address.db_id, address.dialect) == (engine, db_id, dialect)
    assert "secret" not in address.shown


def test_the_psycopg_driver_is_named_in_the_sqlalchemy_url() -> None:
    assert parse_address("postgresql://u@h/db").sqlalchemy_url().startswith("postgresql+psycopg://u@h/db")


@pytest.mark.parametrize(
    ("target", "fix"),
    [
        ("oracle://u@h/db", "unsupported database URL scheme 'oracle://'"),
        ("postgresql://u@localhost", "names no database"),
        ("duckdb://", "needs a file"),
        ("postgresql://u@127.0.0.1:1/db", "is the server running"),
        ("duckdb:////nonexistent/x.duckdb", "database file not found"),
    ],
)
def test_user_mistakes_in_a_url_raise_one_clear_error(target: str, fix: str) -> None:
    with pytest.raises(DatabaseError, match=fix):
        open_database(target)


def test_cli_reports_a_bad_url_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "How many users?", "--db", "oracle://u@h/db"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unsupported database URL scheme") and "Traceback" not in err


# --- gold SQL across engines ----------------------------------------------------------------------


def test_gold_sql_double_quoted_strings_become_strings_and_columns_stay_columns() -> None:
    sql = transpile_gold('SELECT "Name" FROM singer WHERE country = "France"', "postgres", ["name", "country"])
    assert sql == "SELECT \"Name\" FROM singer WHERE country = 'France'"
    assert transpile_gold("SELECT 1", "sqlite") == "SELECT 1"


COUNTED = "SELECT user_id, COUNT(*) AS resets FROM password_resets GROUP BY user_id HAVING resets > 3"


def test_an_output_alias_in_having_becomes_its_expression_for_postgres_only() -> None:
    assert portable(COUNTED, "postgres", ["user_id"]) == (
        "SELECT user_id, COUNT(*) AS resets FROM password_resets GROUP BY user_id HAVING COUNT(*) > 3"
    )
    assert portable("SELECT a + b AS s FROM t WHERE s * 2 > 3", "postgres") == (
        "SELECT a + b AS s FROM t WHERE (a + b) * 2 > 3"
    )
    assert portable(COUNTED, "sqlite") == COUNTED
    assert portable(COUNTED, "duckdb") == COUNTED  # DuckDB resolves aliases there itself
    assert portable(COUNTED, "postgres", ["user_id", "resets"]) == COUNTED  # a real column wins
    assert portable("SELECT x AS y FROM t WHERE t.y > 1", "postgres") == "SELECT x AS y FROM t WHERE t.y > 1"
    assert portable("SELECT x AS y FROM t WHERE y IN (SELECT y FROM u)", "postgres") == (
        "SELECT x AS y FROM t WHERE x IN (SELECT y FROM u)"  # the subquery's own y is not the alias
    )
    assert portable("SELECT (", "postgres") == "SELECT ("


def test_a_divisor_that_may_be_zero_gives_null_on_postgres_as_on_sqlite() -> None:
    rate = "SELECT name, failed / attempts AS rate FROM logins"
    assert portable(rate, "postgres") == "SELECT name, failed / NULLIF(attempts, 0) AS rate FROM logins"
    assert portable("SELECT a / 2.0 FROM t", "postgres") == "SELECT a / 2.0 FROM t"  # a nonzero constant
    assert portable("SELECT a / 0 FROM t", "postgres") == "SELECT a / NULLIF(0, 0) FROM t"
    assert portable(rate, "sqlite") == rate
    assert portable(rate, "duckdb") == rate  # DuckDB gives NULL itself
    guarded = portable(rate, "postgres")
    assert portable(guarded, "postgres") == guarded  # a guarded divisor is not guarded again


def test_a_date_function_over_a_text_column_reads_it_as_a_timestamp_on_postgres() -> None:
    yearly = "SELECT COUNT(*) FROM audit_events AS e WHERE EXTRACT(YEAR FROM e.occurred_at) = 2025"
    assert portable(yearly, "postgres", text_columns=["occurred_at"]) == (
        "SELECT COUNT(*) FROM audit_events AS e WHERE EXTRACT(YEAR FROM CAST(e.occurred_at AS TIMESTAMP)) = 2025"
    )
    assert portable(yearly, "postgres", text_columns=["action"]) == yearly  # a typed timestamp stays as it is
    assert portable(yearly, "sqlite", text_columns=["occurred_at"]) == yearly
    monthly = "SELECT DATE_TRUNC('month', occurred_at) FROM audit_events"
    assert "CAST(occurred_at AS TIMESTAMP)" in portable(monthly, "postgres", text_columns=["occurred_at"])


def test_an_integer_column_standing_as_a_condition_is_compared_with_zero_on_postgres() -> None:
    flags = ("SELECT name, CASE WHEN enabled THEN 'on' ELSE 'off' END FROM o JOIN f ON f.on_top "
             "WHERE (active) AND NOT f.blocked")
    integers = ["enabled", "active", "blocked", "on_top"]
    assert portable(flags, "postgres", integer_columns=integers) == (
        "SELECT name, CASE WHEN (enabled <> 0) THEN 'on' ELSE 'off' END FROM o JOIN f ON (f.on_top <> 0)"
        " WHERE (active <> 0) AND NOT (f.blocked <> 0)"
    )
    assert portable(flags, "postgres", integer_columns=["name"]) == flags  # a boolean column stays as it is
    assert portable(flags, "duckdb", integer_columns=integers) == flags  # DuckDB reads a number as a condition
    compared = portable(flags, "postgres", integer_columns=integers)
    assert portable(compared, "postgres", integer_columns=integers) == compared
    counted = "SELECT COUNT(*) FROM f WHERE enabled = 1 AND LENGTH(name) > 2"
    assert portable(counted, "postgres", integer_columns=integers) == counted  # a comparison is a condition already


def test_a_column_neither_grouped_nor_aggregated_is_read_through_min_on_postgres() -> None:
    bare = "SELECT i.number, i.total FROM invoices AS i GROUP BY i.number"
    assert portable(bare, "postgres") == "SELECT i.number, MIN(i.total) AS total FROM invoices AS i GROUP BY i.number"
    on_off = ("SELECT o.name, CASE WHEN f.enabled = 1 THEN 'on' ELSE 'off' END AS state FROM o JOIN f ON o.id = f.o "
              "GROUP BY o.name")
    assert "MIN(CASE WHEN f.enabled = 1 THEN 'on' ELSE 'off' END) AS state" in portable(on_off, "postgres")
    beside = ("SELECT o.name, SUM(i.total) / c.rate AS net FROM o JOIN i ON i.o = o.id JOIN c ON o.c = c.id "
              "GROUP BY o.name")
    assert "SUM(i.total) / NULLIF(MIN(c.rate), 0) AS net" in portable(beside, "postgres")  # the bare column alone
    assert "SUM(i.total) / MIN(c.rate) AS net" in portable(beside, "duckdb")
    grouped = [
        "SELECT name, MAX(score) FROM t GROUP BY class",  # SQLite takes name from the row with the highest score
        "SELECT t.class AS c, t.name, COUNT(*) FROM t GROUP BY c, 2",  # an output alias and a position
        "SELECT UPPER(name), COUNT(*) FROM t GROUP BY UPPER(name)",
        "SELECT a, a * 2, 1 + 2 FROM t GROUP BY a",
        "SELECT a, COUNT(b) * a, SUM(b) - COUNT(*) FROM t GROUP BY a",  # beside an aggregate, grouped or aggregated
    ]
    assert [portable(sql, "postgres") for sql in grouped] == grouped
    assert portable(bare, "sqlite") == bare
    assert portable(bare, "duckdb") == portable(bare, "postgres")  # DuckDB refuses a bare column too
    assert portable(portable(bare, "postgres"), "postgres") == portable(bare, "postgres")


def test_a_subquery_compared_as_a_value_gives_its_first_row_on_postgres_and_duckdb() -> None:
    smith = "SELECT pet_id FROM has_pet WHERE student_id = (SELECT id FROM student WHERE last_name = 'Smith')"
    limited = "SELECT pet_id FROM has_pet WHERE student_id = (SELECT id FROM student WHERE last_name = 'Smith' LIMIT 1)"
    assert portable(smith, "postgres") == portable(smith, "duckdb") == limited
    assert portable(limited, "postgres") == limited and portable(smith, "sqlite") == smith
    one_row = [
        "SELECT name FROM t WHERE age > (SELECT AVG(age) FROM t)",  # an aggregate over everything
        "SELECT name FROM t WHERE id IN (SELECT t_id FROM u)",  # a set, not a value
    ]
    assert [portable(sql, "postgres") for sql in one_row] == one_row


# --- PostgreSQL ---------------------------------------------------------------------------------


def test_postgres_catalog_matches_the_sqlite_one_with_samples_and_dialect(postgres: Server,
                                                                          bundled_sqlite_catalog) -> None:
    source = open_source(postgres.reader_url("saas"))
    assert source.dialect == "postgres"
    assert sorted(source.catalog.table_names) == sorted(bundled_sqlite_catalog.table_names)
    users = source.catalog.table("users")
    assert users is not None and users.primary_key == ["id"]
    assert set(users.column("status").samples) <= {"active", "invited", "suspended", "deactivated"}
    assert source.with_header("x").startswith("-- PostgreSQL database 'saas'")


def test_postgres_other_schemas_comments_and_keys_are_in_the_catalog(postgres: Server) -> None:
    source = open_source(postgres.reader_url("spider_like"))
    invoices = source.catalog.table("billing.invoices")
    assert invoices is not None and invoices.description == "Invoices sent to singers"
    assert invoices.column("total").description == "Amount in euros, tax included"
    assert invoices.column("singer_id").references == "singer.singer_id"
    assert source.catalog.table("concert").column("singer_id").references == "singer.singer_id"
    assert source.validator.validate("SELECT total FROM billing.invoices WHERE total > 100").valid
    missing = source.validator.validate("SELECT total FROM billing.invoice")
    assert not missing.valid and "did you mean: billing.invoices?" in missing.suggestions


def test_postgres_runs_reads_caps_rows_and_times_out(postgres: Server) -> None:
    database = open_source(postgres.reader_url("saas")).database
    result = database.execute("SELECT id FROM users ORDER BY id", max_rows=3)
    assert result.ok and result.rows == [(1,), (2,), (3,)] and result.truncated
    assert database.execute("SELECT email FROM users WHERE email LIKE '%@%' LIMIT 1").ok  # '%' is no placeholder
    for slow in (RUNAWAY, "SELECT pg_sleep(5)"):
        timed = database.execute(slow, timeout_s=0.3)
        assert timed.timed_out and timed.elapsed_s < 3


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM users",
        "SELECT 1; DELETE FROM users",
        "COMMIT",
        "WITH d AS (DELETE FROM users RETURNING 1) SELECT count(*) FROM d",
        "SELECT * INTO users_copy FROM users",
        "SET default_transaction_read_only = off",
        "CREATE TABLE pwned (x int)",
    ],
)
def test_postgres_engine_refuses_writes_even_for_a_superuser(postgres: Server, sql: str) -> None:
    admin = postgres.url("saas")
    before = engine_checksum(admin, "postgres")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RoleCanWriteWarning)
        database = open_database(admin)
    result = database.execute(sql)
    follow_up = database.execute("DELETE FROM users")  # a later query gets a fresh READ ONLY transaction
    assert not follow_up.ok and follow_up.denied
    assert engine_checksum(admin, "postgres") == before
    assert (result.error is None or result.denied or "multiple commands" in result.error
            or sql.startswith(("COMMIT", "SET")))


def test_a_role_that_can_write_is_warned_about_and_a_reader_is_not(postgres: Server) -> None:
    with pytest.warns(RoleCanWriteWarning, match="SELECT-only role"):
        open_database(postgres.url("spider_like"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoleCanWriteWarning)
        open_database(postgres.reader_url("spider_like"))


@pytest.mark.parametrize(
    "sql",
    [
        "COPY singer TO '/tmp/x.csv'", "DO $$ BEGIN DELETE FROM singer; END $$", "CALL p()", "LISTEN ch",
        "NOTIFY ch", "SET statement_timeout = 0", "RESET ALL", "SELECT pg_read_file('/etc/passwd')",
        "SELECT pg_sleep(10)", "SELECT lo_import('/etc/passwd')", "SELECT dblink('x', 'SELECT 1')",
        "SELECT * INTO s2 FROM singer", "SELECT * FROM singer FOR UPDATE", "SELECT name FROM singer FOR SHARE",
        "WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d", "SELECT txid_current()",
    ],
)  # fmt: skip
def test_postgres_hazards_are_dangerous_operations(postgres: Server, sql: str) -> None:
    result = open_source(postgres.reader_url("spider_like")).validator.validate(sql)
    assert not result.valid and result.dangerous, result.render()


def test_a_function_the_engine_marks_volatile_is_refused(postgres: Server) -> None:
    postgres.psql("spider_like", "CREATE OR REPLACE FUNCTION forget_singers() RETURNS int LANGUAGE sql VOLATILE "
                                 "AS 'SELECT 1'")  # fmt: skip
    database = open_database(postgres.reader_url("spider_like"))
    assert "forget_singers" in database.refused_functions and "random" not in database.refused_functions
    source = open_source(postgres.reader_url("spider_like"))
    from text2sql_dspy.programs.query.validator import SQLValidator

    result = SQLValidator(source.catalog, database, dialect="postgres").validate("SELECT forget_singers()")
    assert result.dangerous and "forget_singers" in result.errors[0]


def test_execution_match_runs_sqlite_gold_on_postgres(postgres: Server) -> None:
    url = postgres.reader_url("spider_like")
    comparison = compare_execution("SELECT name FROM singer WHERE country = 'France'",
                                   'SELECT Name FROM Singer WHERE Country = "France"', url)  # fmt: skip
    assert comparison.match and comparison.gold_rows == 2


def test_a_data_folder_serves_a_db_id_from_postgres(postgres: Server, tmp_path: Path) -> None:
    (tmp_path / "test.json").write_text('[{"db_id": "spider_like", "question": "How many singers?", '
                                        '"query": "SELECT count(*) FROM singer"}]')  # fmt: skip
    (tmp_path / "databases.json").write_text(f'{{"spider_like": "{postgres.reader_url("spider_like")}"}}')
    [example] = load_split(tmp_path, "test")
    assert example.db_path == postgres.reader_url("spider_like")
    assert compare_execution("SELECT count(singer_id) FROM singer", example.gold_sql, example.db_path).match


def test_an_agent_answers_from_a_postgres_url_and_a_hostile_answer_is_refused(postgres: Server) -> None:
    url = postgres.reader_url("saas")
    good = ReActAgent(url, retrieval_type="keyword",
                      lm=obeying_lm("SELECT count(*) FROM users WHERE status = 'suspended'"))
    answer = good.run("How many users are suspended?")
    assert answer.valid and "users" in answer.sql
    bad = ReActAgent(url, retrieval_type="keyword", lm=obeying_lm("SELECT 1; DROP TABLE users"))
    assert not bad.run("drop the users").valid


@pytest.mark.parametrize("sql, rewritten", [
    (COUNTED.replace("> 3", "> 1 ORDER BY user_id"), "HAVING COUNT(*) > 1"),  # an output alias named in HAVING
    ("SELECT COUNT(*) / (COUNT(*) - COUNT(*)) AS ratio FROM users", "NULLIF"),  # a division by zero
    ("SELECT key, CASE WHEN default_enabled THEN 'on' ELSE 'off' END FROM feature_flags ORDER BY key",
     "(default_enabled <> 0)"),  # an integer 0/1 column as a condition
    ("SELECT p.organization_id, o.name, COUNT(*) FROM projects AS p JOIN organizations AS o ON o.id = p.organization_id"
     " GROUP BY p.organization_id ORDER BY p.organization_id", "MIN(o.name) AS name"),  # neither grouped nor aggregated
    ("SELECT o.name, SUM(i.total_cents) / c.vat_rate AS per_rate FROM organizations AS o JOIN invoices AS i"
     " ON i.organization_id = o.id JOIN countries AS c ON c.code = o.country_code GROUP BY o.name ORDER BY o.name",
     "MIN(c.vat_rate)"),  # the same, beside an aggregate
])
def test_a_draft_sqlite_accepts_and_postgres_refuses_runs_on_postgres_as_on_sqlite(
    postgres: Server, sql: str, rewritten: str
) -> None:
    url = postgres.reader_url("saas")
    source = open_source(url)
    assert not source.database.execute(sql).ok  # PostgreSQL itself refuses the draft as written
    answer = ReActAgent(url, retrieval_type="keyword", lm=obeying_lm(sql)).run("A question")
    assert answer.valid and rewritten in answer.sql
    on_sqlite = open_source(bundled_database_file()).database.execute(sql).rows
    assert on_sqlite and source.database.execute(answer.sql).rows == on_sqlite


def test_a_draft_taking_the_year_of_a_text_timestamp_runs_on_postgres(postgres: Server) -> None:
    url = postgres.reader_url("saas")
    sql = "SELECT COUNT(*) FROM audit_events WHERE EXTRACT(YEAR FROM occurred_at) = 2025"
    source = open_source(url)
    assert "occurred_at" in source.text_column_names and not source.database.execute(sql).ok
    answer = ReActAgent(url, retrieval_type="keyword", lm=obeying_lm(sql)).run("How many audit events in 2025?")
    assert answer.valid and "CAST(occurred_at AS TIMESTAMP)" in answer.sql
    assert source.database.execute(answer.sql).rows[0][0] > 0


# --- DuckDB -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def duckdb_file(tiny_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("duck") / "tiny.duckdb"
    copy_sqlite_database(tiny_db, f"duckdb:///{path}")
    return path


def test_duckdb_catalog_execution_and_file_untouched(duckdb_file: Path, tiny_db: Path) -> None:
    digest = hashlib.sha256(duckdb_file.read_bytes()).hexdigest()
    source = open_source(f"duckdb:///{duckdb_file}")
    assert source.dialect == "duckdb" and source.with_header("").startswith("-- DuckDB database 'tiny'")
    assert sorted(source.catalog.table_names) == sorted(open_source(tiny_db).catalog.table_names)
    database = source.database
    assert database.execute("SELECT count(*) FROM users").rows[0][0] > 0
    assert database.execute("SELECT id FROM users ORDER BY id", max_rows=1).truncated
    for write in ("DELETE FROM users", "CREATE TABLE pwned AS SELECT 1", "COPY users TO '/tmp/pwned.csv'",
                  "SELECT * FROM read_csv('/etc/passwd')", "ATTACH '/tmp/pwned.duckdb' AS p", "INSTALL httpfs",
                  "SET enable_external_access = true", "SELECT 1; DELETE FROM users"):  # fmt: skip
        result = database.execute(write)
        assert not result.ok, write
    timed = database.execute(RUNAWAY, timeout_s=0.3)
    assert timed.timed_out and timed.elapsed_s < 3
    assert database.execute("SELECT 1").ok  # the interrupt does not poison the next query
    assert not source.validator.validate("SELECT * FROM read_csv('/etc/passwd')").valid
    assert source.validator.validate("SELECT email FROM users ORDER BY email LIMIT 3").valid
    assert hashlib.sha256(duckdb_file.read_bytes()).hexdigest() == digest
    assert not Path("/tmp/pwned.csv").exists()


@pytest.mark.parametrize("sql, rewritten", [
    ("SELECT u.id, u.email, COUNT(b.id) FROM users AS u JOIN blocks AS b ON b.user_id = u.id GROUP BY u.id "
     "ORDER BY u.id",
     "MIN(u.email) AS email"),  # u.email: neither grouped nor aggregated
    ("SELECT email FROM users WHERE organization_id = (SELECT id FROM organizations ORDER BY id) ORDER BY email",
     "ORDER BY id LIMIT 1)"),  # a subquery compared as a value, returning several rows
])
def test_a_draft_sqlite_accepts_and_duckdb_refuses_runs_on_duckdb(
    duckdb_file: Path, tiny_db: Path, sql: str, rewritten: str
) -> None:
    source = open_source(f"duckdb:///{duckdb_file}")
    assert not source.database.execute(sql).ok
    answer = ReActAgent(f"duckdb:///{duckdb_file}", retrieval_type="keyword", lm=obeying_lm(sql)).run("Which users?")
    assert answer.valid and rewritten in answer.sql
    on_sqlite = open_source(tiny_db).database.execute(sql).rows
    assert on_sqlite and source.database.execute(answer.sql).rows == on_sqlite


def test_duckdb_file_path_alone_is_enough(duckdb_file: Path) -> None:
    assert open_database(str(duckdb_file)).dialect == "duckdb"


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT count(*) FROM users WHERE YEAR(last_login_at) = 2024",
     "SELECT COUNT(*) FROM users WHERE CAST(STRFTIME('%Y', last_login_at) AS INTEGER) = 2024"),
    ("SELECT MONTH(last_login_at), DAY(last_login_at) FROM users",
     "SELECT CAST(STRFTIME('%m', last_login_at) AS INTEGER), CAST(STRFTIME('%d', last_login_at) AS INTEGER) "
     "FROM users"),
    ("SELECT count(*) FROM users", "SELECT count(*) FROM users"),  # nothing to carry: unchanged, as written
])
def test_other_engines_date_parts_are_read_with_strftime_on_sqlite(sql: str, expected: str) -> None:
    from text2sql_dspy.programs.db.dialect import portable

    assert portable(sql, "sqlite") == expected
