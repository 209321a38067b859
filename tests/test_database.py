"""Read-only execution: results, row caps, timeouts, and refusal of every write."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from text2sql_dspy.programs.db.database import SQLiteDatabase
from text2sql_dspy.programs.errors import DatabaseError


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_select_returns_columns_and_rows(tiny_db: Path) -> None:
    result = SQLiteDatabase(tiny_db).execute("SELECT email FROM users WHERE status = 'suspended'")
    assert result.ok and result.columns == ["email"] and result.rows == [("bob@acme.test",)]


def test_row_cap_truncates(tiny_db: Path) -> None:
    result = SQLiteDatabase(tiny_db).execute("SELECT id FROM login_attempts ORDER BY id", max_rows=2)
    assert result.rows == [(1,), (2,)] and result.truncated


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n",
        "SELECT count(*) FROM " + ", ".join(f"login_attempts AS j{i}" for i in range(12)),  # 6^12 rows
        "SELECT max(a.attempted_at || b.attempted_at || c.attempted_at) FROM login_attempts a, login_attempts b, "
        "login_attempts c, login_attempts d, login_attempts e, login_attempts f, login_attempts g, login_attempts h, "
        "login_attempts i, login_attempts j, login_attempts k",
        "WITH RECURSIVE s(v) AS (SELECT 'x' UNION ALL SELECT v || 'x' FROM s) SELECT count(*) FROM s",
    ],
    ids=["recursive_cte", "cartesian_count", "cartesian_aggregate", "recursive_string"],
)
def test_runaway_query_stops_within_its_timeout(tiny_db: Path, sql: str) -> None:
    result = SQLiteDatabase(tiny_db).execute(sql, timeout_s=0.3)
    assert result.timed_out and "timed out" in result.error
    assert result.elapsed_s < 2.0


def test_a_huge_value_is_refused_at_once(tiny_db: Path) -> None:
    """One giant allocation is a single step the timeout cannot interrupt; the value-size cap stops it."""
    for sql in ("SELECT length(hex(zeroblob(400000000)))", "SELECT length(randomblob(999999999))"):
        result = SQLiteDatabase(tiny_db).execute(sql, timeout_s=5.0)
        assert not result.ok and "too big" in result.error and result.elapsed_s < 0.5
    assert SQLiteDatabase(tiny_db).execute("SELECT length(zeroblob(5000000))").rows == [(5_000_000,)]


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM users",
        "UPDATE users SET status = 'active'",
        "INSERT INTO blocks VALUES (9, 1, 'x', '2024-01-01', NULL)",
        "REPLACE INTO organizations VALUES (1, 'Evil', 'Free')",
        "DROP TABLE users",
        "ALTER TABLE users ADD COLUMN pwned TEXT",
        "CREATE TABLE t (x)",
        "ATTACH DATABASE ':memory:' AS other",
        "PRAGMA journal_mode = WAL",
        "VACUUM",
        "SELECT load_extension('evil')",
        "SELECT 1; DROP TABLE users",
        "WITH gone AS (SELECT 1) DELETE FROM users",
    ],
)
def test_writes_are_refused_and_the_file_is_unchanged(tiny_db: Path, sql: str) -> None:
    before = sha256(tiny_db)
    result = SQLiteDatabase(tiny_db).execute(sql)
    assert not result.ok
    assert sha256(tiny_db) == before


def test_missing_or_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="not found"):
        SQLiteDatabase(tmp_path / "nope.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DatabaseError, match="not a readable SQLite database"):
        SQLiteDatabase(junk)
