"""Tests of the structural SQL validator (no LM, no Spider files: a tiny SQLite file per module)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from text2sql_dspy.programs.catalog.catalog import introspect_sqlite
from text2sql_dspy.programs.db.database import SQLiteDatabase
from text2sql_dspy.programs.query.lints import keys_shown
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.query.validator import MAX_NESTING, MAX_QUERY_CHARS, SQLValidator, ValidationResult

DDL = """
CREATE TABLE organizations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE users (
  id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, status TEXT NOT NULL, created_at TEXT
);
CREATE TABLE login_attempts (
  id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), success INTEGER NOT NULL, attempted_at TEXT
);
CREATE TABLE blocks (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), reason TEXT);
INSERT INTO organizations VALUES (1, 'Acme', 'FR'), (2, 'Globex', 'US');
INSERT INTO users VALUES
  (1, 1, 'Ann', 'ann@acme.test', 'active', '2024-05-01'),
  (2, 1, 'Bob', 'bob@acme.test', 'suspended', '2024-04-02'),
  (3, 2, 'Cy', 'cy@globex.test', 'active', NULL);
INSERT INTO login_attempts VALUES (1, 1, 1, '2024-05-01'), (2, 2, 0, '2024-04-02'), (3, 2, 0, '2024-04-02');
INSERT INTO blocks VALUES (1, 2, 'too many failed logins');
"""


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("validator") / "app.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def database(db_path: Path) -> SQLiteDatabase:
    return SQLiteDatabase(db_path)


@pytest.fixture(scope="module")
def validator(db_path: Path, database: SQLiteDatabase) -> SQLValidator:
    return SQLValidator(introspect_sqlite(db_path), database)


@pytest.fixture(scope="module")
def static_validator(db_path: Path) -> SQLValidator:
    return SQLValidator(introspect_sqlite(db_path))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- valid queries ------------------------------------------------------------------------------

VALID = [
    "SELECT name FROM users",
    "select NAME from USERS where Email like '%@acme.test'",
    "SELECT u.name, o.name FROM users AS u JOIN organizations AS o ON o.id = u.org_id",
    "SELECT u.name FROM users u, organizations o WHERE u.org_id = o.id AND o.country = 'FR'",
    "WITH fails AS (SELECT user_id, count(*) AS n FROM login_attempts WHERE success = 0 GROUP BY user_id) "
    "SELECT u.name, f.n FROM users u JOIN fails f ON f.user_id = u.id ORDER BY f.n DESC",
    "WITH t(a, b) AS (SELECT id, name FROM users) SELECT a, b FROM t",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3) SELECT n FROM c",
    "SELECT name FROM users WHERE id IN (SELECT user_id FROM blocks)",
    "SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM blocks b WHERE b.user_id = u.id)",
    "SELECT name FROM users u WHERE (SELECT count(*) FROM login_attempts WHERE user_id = u.id) > 1",
    "SELECT u.name, (SELECT count(*) FROM login_attempts la WHERE la.user_id = u.id) AS tries FROM users u",
    "SELECT status, count(*) AS n FROM users GROUP BY status HAVING n > 1 ORDER BY n DESC",
    "SELECT name AS who FROM users ORDER BY who",
    "SELECT name FROM users UNION SELECT name FROM organizations ORDER BY name",
    "SELECT email FROM users EXCEPT SELECT u.email FROM users u JOIN blocks b ON b.user_id = u.id",
    "SELECT t.nm FROM (SELECT name AS nm FROM users) AS t WHERE t.nm <> 'Bob'",
    "SELECT t.email FROM (SELECT * FROM users) t WHERE t.status = 'active'",
    "SELECT count(*) FROM users",
    "SELECT u.* FROM users u JOIN blocks b ON b.user_id = u.id",
    "SELECT user_id, reason FROM blocks JOIN login_attempts USING (user_id)",
    "SELECT name, row_number() OVER (PARTITION BY org_id ORDER BY created_at DESC) AS rn FROM users",
    "SELECT org_id, count(*) FROM users GROUP BY 1 ORDER BY 2 DESC",
    "SELECT \"users\".\"name\" FROM \"users\" WHERE status = 'active'",
    "SELECT [name] FROM [users]",
    "SELECT name FROM main.users",
    "SELECT rowid, name FROM users",
    "SELECT CASE WHEN success = 1 THEN 'ok' ELSE 'failed' END AS outcome, count(*) FROM login_attempts "
    "GROUP BY outcome",
    "SELECT name FROM users WHERE status = \"active\"",  # double-quoted string: SQLite reads a string
    "SELECT strftime('%Y', created_at) AS y FROM users WHERE created_at IS NOT NULL ORDER BY name COLLATE NOCASE",
    "SELECT o.name, sum(CASE WHEN la.success = 0 THEN 1 ELSE 0 END) AS fails FROM organizations o "
    "JOIN users u ON u.org_id = o.id JOIN login_attempts la ON la.user_id = u.id GROUP BY o.name ORDER BY fails DESC",
]


@pytest.mark.parametrize("sql", VALID)
def test_valid_queries_pass(validator: SQLValidator, sql: str) -> None:
    result = validator.validate(sql)
    assert result.valid, result.render()
    assert result.errors == []
    assert not result.dangerous
    assert result.render().startswith("VALID")


def test_tables_read_are_reported_in_order(validator: SQLValidator) -> None:
    result = validator.validate(
        "WITH b AS (SELECT user_id FROM blocks) SELECT o.name FROM organizations o JOIN users u ON u.org_id = o.id "
        "WHERE u.id IN (SELECT user_id FROM b)"
    )
    assert result.valid, result.render()
    assert result.tables == ["blocks", "organizations", "users"]


# --- unknown and ambiguous names -----------------------------------------------------------------


def test_hallucinated_column_gets_did_you_mean_and_real_columns(validator: SQLValidator) -> None:
    result = validator.validate("SELECT u.emial FROM users u")
    assert not result.valid and not result.dangerous
    assert result.errors == ["unknown column 'u.emial'"]
    assert "did you mean: email?" in result.suggestions
    assert "columns of users: id, org_id, name, email, status, created_at" in result.suggestions
    rendered = result.render()
    assert rendered.startswith("INVALID") and "did you mean: email?" in rendered


def test_unqualified_hallucinated_column_in_a_join_is_qualified_in_the_suggestion(validator: SQLValidator) -> None:
    result = validator.validate("SELECT emial FROM users JOIN blocks ON users.id = blocks.user_id")
    assert result.errors == ["unknown column 'emial'"]
    assert "did you mean: users.email?" in result.suggestions
    assert any(s.startswith("columns of blocks:") for s in result.suggestions)


def test_column_of_a_table_not_in_from_is_pointed_at(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name, reason FROM users")
    assert result.errors == ["unknown column 'reason'"]
    assert any("'reason' is a column of blocks" in s for s in result.suggestions)


def test_all_unknown_names_are_reported_at_once(validator: SQLValidator) -> None:
    result = validator.validate("SELECT nmae, emial FROM users WHERE sttus = 'active'")
    assert result.errors == ["unknown column 'nmae'", "unknown column 'emial'", "unknown column 'sttus'"]


def test_hallucinated_table_gets_did_you_mean(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name FROM user_list")
    assert result.errors == ["unknown table 'user_list'"]
    assert "did you mean: users?" in result.suggestions
    assert "available tables: organizations, users, login_attempts, blocks" in result.suggestions


def test_misspelled_table_gets_did_you_mean(validator: SQLValidator) -> None:
    result = validator.validate("SELECT * FROM login_attempt")
    assert result.errors == ["unknown table 'login_attempt'"]
    assert "did you mean: login_attempts?" in result.suggestions


def test_cte_name_is_not_an_unknown_table_and_its_columns_are_checked(validator: SQLValidator) -> None:
    assert validator.validate("WITH Recent AS (SELECT id FROM users) SELECT id FROM recent").valid
    result = validator.validate("WITH recent AS (SELECT id FROM users) SELECT name FROM recent")
    assert result.errors == ["unknown column 'name'"]
    assert "columns of recent: id" in result.suggestions


def test_derived_table_columns_are_checked(validator: SQLValidator) -> None:
    result = validator.validate("SELECT t.name FROM (SELECT name AS nm FROM users) t")
    assert result.errors == ["unknown column 't.name'"]
    assert "did you mean: nm?" in result.suggestions


def test_names_inside_ctes_and_derived_tables_are_checked(validator: SQLValidator) -> None:
    for sql in (
        "WITH c AS (SELECT emial FROM users) SELECT * FROM c",
        "SELECT t.* FROM (SELECT emial FROM users) AS t",
        "SELECT name FROM users WHERE id IN (SELECT user_id FROM blocks WHERE emial = 'x')",
    ):
        result = validator.validate(sql)
        assert result.errors == ["unknown column 'emial'"], sql
        assert any(s in {"did you mean: email?", "did you mean: users.email?"} for s in result.suggestions), sql


def test_result_alias_is_not_visible_in_the_select_list(validator: SQLValidator) -> None:
    assert validator.validate("SELECT name AS n FROM users WHERE n <> 'Bob' ORDER BY n").valid
    result = validator.validate("SELECT name AS n, upper(n) FROM users")
    assert result.errors == ["unknown column 'n'"]


def test_recursive_cte_columns(validator: SQLValidator) -> None:
    result = validator.validate("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT m + 1 FROM c WHERE n < 3) SELECT n "
                                "FROM c")
    assert result.errors == ["unknown column 'm'"]
    assert "columns of c: n" in result.suggestions


def test_system_table_is_a_warning(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name FROM sqlite_master WHERE type = 'table'")
    assert result.valid, result.render()
    assert any("system table sqlite_master" in w for w in result.warnings)


def test_ambiguous_column(validator: SQLValidator) -> None:
    result = validator.validate("SELECT id FROM users JOIN blocks ON users.id = blocks.user_id")
    assert not result.valid
    assert result.errors == ["ambiguous column 'id' (in users, blocks): qualify it"]


def test_unknown_alias_and_aliased_table_name(validator: SQLValidator) -> None:
    result = validator.validate("SELECT x.name FROM users u")
    assert result.errors == ["unknown table or alias 'x' in 'x.name'"]
    result = validator.validate("SELECT users.name FROM users AS u")
    assert result.errors == ["unknown table or alias 'users' in 'users.name'"]
    assert any("aliased as u" in s for s in result.suggestions)


def test_quoted_hallucinated_select_column_warns(validator: SQLValidator) -> None:
    result = validator.validate('SELECT "nmae" FROM users')
    assert result.valid  # SQLite would return the string 'nmae': legal but surely unintended
    assert any("not a column" in w and "did you mean: name?" in w for w in result.warnings)


def test_table_valued_function_is_a_warning_not_an_error(static_validator: SQLValidator) -> None:
    result = static_validator.validate("SELECT value FROM json_each('[1, 2]')")
    assert result.valid, result.render()
    assert any("table-valued function json_each" in w for w in result.warnings)


# --- dangerous operations ---------------------------------------------------------------------

DANGEROUS = [
    "INSERT INTO users (id, org_id, name, email, status) VALUES (9, 1, 'x', 'x@x', 'active')",
    "UPDATE users SET status = 'active'",
    "DELETE FROM users",
    "REPLACE INTO blocks VALUES (1, 1, 'x')",
    "INSERT OR REPLACE INTO blocks VALUES (1, 1, 'x')",
    "INSERT INTO blocks (id, user_id, reason) VALUES (1, 1, 'x') ON CONFLICT(id) DO UPDATE SET reason = 'y'",
    "UPSERT INTO blocks VALUES (1, 1, 'x')",
    "DROP TABLE users",
    "ALTER TABLE users ADD COLUMN pwned TEXT",
    "ALTER TABLE users RENAME TO people",
    "CREATE TABLE pwned (x INTEGER)",
    "CREATE INDEX idx ON users(name)",
    "CREATE VIEW v AS SELECT * FROM users",
    "CREATE TRIGGER t AFTER INSERT ON users BEGIN DELETE FROM users; END",
    "ATTACH DATABASE '/tmp/pwned.sqlite' AS pwned",
    "DETACH DATABASE main",
    "PRAGMA writable_schema = 1",
    "PRAGMA table_info(users)",
    "VACUUM",
    "VACUUM INTO '/tmp/validator-test-copy.sqlite'",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT a",
    "WITH x AS (DELETE FROM users RETURNING *) SELECT * FROM x",
    "WITH x AS (SELECT id FROM users) DELETE FROM users WHERE id IN (SELECT id FROM x)",
    "SELECT * INTO backup FROM users",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT name FROM users WHERE LOAD_EXTENSION('x') IS NULL",
    "SELECT readfile('/etc/passwd')",
    "SELECT \"load_extension\"('x')",
    "SELECT [readfile]('/etc/passwd')",
    "SELECT writefile('/tmp/x', name) FROM users",
    "SELECT fts3_tokenizer('simple')",
    "SELECT 1; SELECT 2",
    "SELECT name FROM users; DROP TABLE users",
    "SELECT 1; -- \n DROP TABLE users",
    "SELECT 1; /* harmless */ DELETE FROM users",
    "EXPLAIN SELECT 1",
]


@pytest.mark.parametrize("sql", DANGEROUS)
def test_dangerous_operations_are_refused(validator: SQLValidator, sql: str) -> None:
    result = validator.validate(sql)
    assert not result.valid
    assert result.dangerous, result.render()
    assert result.errors and result.errors[0].startswith("dangerous operation:")
    assert result.render().startswith("INVALID")


def test_multiple_statements_message_names_them(validator: SQLValidator) -> None:
    result = validator.validate("SELECT 1; -- just a comment\n DROP TABLE users")
    assert result.errors[0].startswith("dangerous operation: multiple statements (SELECT, DROP)")


def test_dangerous_corpus_leaves_the_database_unchanged(
    validator: SQLValidator, database: SQLiteDatabase, db_path: Path, tmp_path: Path
) -> None:
    before = _sha256(db_path)
    for sql in DANGEROUS:
        validator.validate(sql)
        database.execute(sql)  # the executor's own guards, without the validator in front
    assert _sha256(db_path) == before
    assert not Path("/tmp/validator-test-copy.sqlite").exists()
    assert not Path("/tmp/pwned.sqlite").exists()
    assert validator.validate("SELECT count(*) FROM users").valid


# --- cleaning ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```sql\nSELECT name FROM users;\n```", "SELECT name FROM users"),
        ("```\nSELECT 1\n```", "SELECT 1"),
        ("Here is the query:\n\n```sqlite\nSELECT 1;\n```\nIt counts things.", "SELECT 1"),
        ("```SELECT 1```", "SELECT 1"),
        ("sql\nSELECT 1", "SELECT 1"),
        ("SQL: SELECT 1;", "SELECT 1"),
        ("The answer is:\nSELECT name\nFROM users;", "SELECT name\nFROM users"),
        ("SELECT 1;;  \n", "SELECT 1"),
        ("SELECT 1; -- trailing comment", "SELECT 1"),
        ("SELECT name FROM users;\nThis lists every user.", "SELECT name FROM users"),
        ("SELECT name FROM users\n\nThis lists every user.", "SELECT name FROM users"),
        ("`SELECT 1`", "SELECT 1"),
        ("  SELECT ';' FROM users  ", "SELECT ';' FROM users"),
        ("SELECT 1; DROP TABLE users", "SELECT 1; DROP TABLE users"),  # kept: the policy refuses it
        ("DROP TABLE users;\nSELECT 1", "DROP TABLE users;\nSELECT 1"),  # a statement is not prose
        ("Use the following query:\nSELECT 1", "SELECT 1"),
        ("SELECT 1; This uses the index.", "SELECT 1"),
        ("SELECT name FROM users [[ ## completed ## ]]", "SELECT name FROM users"),
        ("SELECT name FROM users\n[[ ## explanation ## ]]\nIt lists users.", "SELECT name FROM users"),
    ],
)
def test_clean_sql(text: str, expected: str) -> None:
    assert clean_sql(text) == expected


def test_fenced_input_is_cleaned_and_validated(validator: SQLValidator) -> None:
    result = validator.validate("Sure! Here it is:\n```sql\nSELECT u.name\nFROM users u;\n```")
    assert result.valid, result.render()
    assert result.sql == "SELECT u.name\nFROM users u"


# --- syntax, dry run, warnings ------------------------------------------------------------------


def test_syntax_error_is_concise(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name FROM users WHERE")
    assert not result.valid and not result.dangerous
    assert len(result.errors) == 1
    message = result.errors[0]
    assert message.startswith("syntax error:")
    assert "line 1" in message and "WHERE" in message
    assert "Traceback" not in message and "\n" not in message and len(message) < 250


def test_unterminated_string_is_a_syntax_error(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name FROM users WHERE name = 'Ann")
    assert not result.valid
    assert result.errors[0].startswith("syntax error:")


def test_dry_run_catches_what_static_checks_miss(validator: SQLValidator, static_validator: SQLValidator) -> None:
    sql = "SELECT name FROM users WHERE id = likelihood(1, 2)"
    assert static_validator.validate(sql).valid
    result = validator.validate(sql)
    assert not result.valid and not result.dangerous
    assert result.errors == ["database error: second argument to likelihood() must be a constant between 0.0 and 1.0"]


def test_dry_run_timeout_is_a_warning(db_path: Path, database: SQLiteDatabase) -> None:
    slow = SQLValidator(introspect_sqlite(db_path), database, dry_run_timeout_s=0.05)
    sql = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100000000) "
        "SELECT count(*) FROM c"
    )
    result = slow.validate(sql)
    assert result.valid, result.render()
    assert any(w.startswith("dry run timed out after 0.05s") for w in result.warnings)


def test_empty_result_is_a_warning(validator: SQLValidator) -> None:
    result = validator.validate("SELECT name FROM users WHERE status = 'Active'")
    assert result.valid
    assert any("returns no rows" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("sql", "warning"),
    [
        ("SELECT * FROM users", "selects *"),
        ("SELECT u.name, o.name FROM users u, organizations o", "cartesian join"),
        ("SELECT u.name FROM users u CROSS JOIN blocks b", "cartesian join"),
        ("SELECT name FROM users LIMIT 1", "LIMIT without ORDER BY"),
    ],
)
def test_style_warnings(validator: SQLValidator, sql: str, warning: str) -> None:
    result = validator.validate(sql)
    assert result.valid, result.render()
    assert any(w.startswith(warning) for w in result.warnings), result.warnings


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT u.name, o.name FROM users u, organizations o WHERE u.org_id = o.id",
        "SELECT name FROM users ORDER BY created_at LIMIT 1",
        "SELECT count(*) FROM users WHERE EXISTS (SELECT * FROM blocks WHERE blocks.user_id = users.id)",
        "SELECT org_id FROM users WHERE status = 'active'",  # a key shown: the agents judge it, with the question
    ],
)
def test_no_spurious_warnings(validator: SQLValidator, sql: str) -> None:
    result = validator.validate(sql)
    assert result.valid and result.warnings == [], result.render()


@pytest.mark.parametrize(("sql", "question", "shown"), [
    ("SELECT org_id FROM users WHERE name = 'Ann'", "Which organization is Ann in?", ["users.org_id"]),
    ("SELECT u.org_id FROM users u JOIN organizations o ON u.org_id = o.id WHERE o.country = 'FR'",
     "Where do French users work?", ["users.org_id"]),  # joined along the key, none of its columns shown
    ("SELECT org_id FROM users WHERE name = 'Ann'", "What is the organization id of Ann?", []),  # asked for
    ("SELECT org_id FROM users WHERE name = 'Ann'", "Give Ann's organization number", []),
    ("SELECT u.org_id, o.name FROM users u JOIN organizations o ON u.org_id = o.id", "Organizations of users", []),
    ("SELECT COUNT(org_id) FROM users", "How many users have an organization?", []),  # not shown as such
    ("SELECT name FROM users WHERE id IN (SELECT user_id FROM blocks)", "Who is blocked?", []),  # a subquery's
    ("SELECT user_id FROM login_attempts", "Who tried to log in?", ["login_attempts.user_id"]),
    ("SELECT id FROM users", "List the users", []),  # a primary key, not a foreign one
])
def test_a_key_shown_where_the_question_asks_for_no_id(db_path: Path, sql: str, question: str,
                                                       shown: list[str]) -> None:
    found = keys_shown(sql, introspect_sqlite(db_path), question)
    assert [f.split("shows the key ")[1].split(",")[0] for f in found] == shown


# --- hostile and absurd input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty query"),
        ("  ;  ", "empty query"),
        ("-- only a comment", "empty query"),
        ("SELECT name FROM users WHERE name = '\udcff'", "not valid UTF-8"),
        (b"SELECT 1 \xff\xfe", "not valid UTF-8"),
        ("SELECT name FROM users\x00; DROP TABLE users", "NUL"),
        ("SELECT 1 WHERE " + " OR ".join(["1 = 1"] * 20_000), "query too long"),
        ("x" * (MAX_QUERY_CHARS + 1), "query too long"),
        ("SELECT " + "(" * 5000 + "1" + ")" * 5000, "too deeply nested"),
        ("SELECT " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1), "too deeply nested"),
        ("SELECT " + "CASE WHEN 1 THEN " * 500 + "1" + " END" * 500, "too deeply nested"),
        (" UNION ".join(["SELECT 1"] * 600), "too many UNION"),
        (None, "expected the SQL query as text"),
    ],
)
def test_hostile_input_is_invalid_without_raising(validator: SQLValidator, text: object, error: str) -> None:
    start = time.process_time()  # CPU time: a busy machine slows the wall clock, not the work done
    result = validator.validate(text)  # type: ignore[arg-type]
    assert time.process_time() - start < 2.0
    assert isinstance(result, ValidationResult)
    assert not result.valid
    assert any(error in e for e in result.errors), result.errors


def test_moderate_nesting_still_validates(validator: SQLValidator) -> None:
    depth = 10
    sql = "SELECT name FROM users WHERE id IN " + "(SELECT user_id FROM blocks WHERE user_id IN " * depth
    sql += "(SELECT id FROM users)" + ")" * depth
    assert validator.validate(sql).valid


# --- sharing -----------------------------------------------------------------------------


def test_validator_is_thread_safe(validator: SQLValidator) -> None:
    corpus = VALID[:10] + DANGEROUS[:10] + ["SELECT u.emial FROM users u", "SELECT * FROM usr"]
    expected = [validator.validate(sql) for sql in corpus]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(validator.validate, corpus)) == expected
