"""The read-only policy on its own: statement words of unparseable text, and verdicts on parsed trees."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot.dialects.dialect import Dialect

from text2sql_dspy.programs.db.policy import DANGEROUS_FUNCTIONS, policy_violation, refused_word, statement_keywords


def _tokens(sql: str):
    return Dialect.get_or_raise("sqlite").tokenize(sql)


@pytest.mark.parametrize(
    ("sql", "word"),
    [
        ("SELECT 1", None),
        ("UPSERT INTO t VALUES (1)", "UPSERT"),
        ("SELECT 1; DROP TABLE t", "DROP"),
        ("WITH x AS (SELECT 1) REPLACE INTO t SELECT * FROM x", "REPLACE"),
        ("SELECT replace(name, 'a', 'b') FROM t", None),  # a function, not a statement
        ("SELECT 'DELETE' FROM t", None),  # a string
        ("SET search_path = evil", "SET"),
        ("SELECT set FROM t", None),  # an English word inside a query
    ],
)
def test_refused_word(sql: str, word: str | None) -> None:
    assert refused_word(_tokens(sql)) == word


def test_statement_keywords() -> None:
    assert statement_keywords(_tokens("select 1; -- note\n drop table t; vacuum")) == ["SELECT", "DROP", "VACUUM"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT name FROM t WHERE id IN (SELECT id FROM u)", None),
        ("WITH x AS (SELECT 1 AS a) SELECT a FROM x UNION SELECT 2", None),
        ("DELETE FROM t", "dangerous operation: DELETE (only a single read-only SELECT is allowed)"),
        ("INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO NOTHING",
         "dangerous operation: INSERT ... ON CONFLICT (upsert) (only a single read-only SELECT is allowed)"),
        ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
         "dangerous operation: DELETE inside a CTE (only a single read-only SELECT is allowed)"),
        ("SELECT * INTO copy FROM t",
         "dangerous operation: SELECT ... INTO writes a table (only plain SELECT is allowed)"),
        ("SELECT load_extension('x')", "dangerous operation: function load_extension() is not allowed"),
        ("SELECT [readfile]('/etc/passwd')", "dangerous operation: function readfile() is not allowed"),
        ("VALUES (1)", "not a query: expected one SELECT statement, got VALUES"),
    ],
)  # fmt: skip
def test_policy_violation(sql: str, message: str | None) -> None:
    tree = sqlglot.parse_one(sql, read="sqlite")
    assert policy_violation(tree, statement_keywords(_tokens(sql)), DANGEROUS_FUNCTIONS) == message
