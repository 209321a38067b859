"""describe_query: a query's explanation read off its sqlglot AST, with no model call."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.query.describe import describe_query


@pytest.mark.parametrize(
    ("sql", "dialect", "expected"),
    [
        ("SELECT count(*) FROM users WHERE status = 'suspended'", "sqlite",
         "Reads users; filters rows (WHERE); returns COUNT(*)."),
        ("SELECT name FROM users WHERE blocked = 1 ORDER BY name", "sqlite",
         "Reads users; filters rows (WHERE); sorts; returns name."),
        ("SELECT u.full_name, count(*) AS n FROM users u JOIN blocks b ON b.user_id = u.id "
         "GROUP BY u.id HAVING count(*) > 1 ORDER BY n DESC LIMIT 3", "sqlite",
         "Reads blocks, users; joins them; groups and filters groups (HAVING); sorts; keeps the first 3; "
         "returns full_name, n."),
        ("SELECT id FROM users WHERE id IN (SELECT user_id FROM blocks)", "sqlite",
         "Reads blocks, users; filters rows (WHERE); uses a subquery; returns id."),
        ("WITH recent AS (SELECT id FROM users) SELECT * FROM recent", "sqlite",  # a CTE is not a table read
         "Reads users; uses a subquery; returns *."),
        ("SELECT a, b, c, d, e, f FROM t1, t2", "sqlite", "Reads t1, t2; joins them; returns a, b, c, d and 2 more."),
        ("SELECT a FROM t ORDER BY a FETCH FIRST 5 ROWS ONLY", "postgres",
         "Reads t; sorts; keeps the first 5; returns a."),
        ("SELECT a FROM t ORDER BY a FETCH FIRST ROW ONLY", "postgres",
         "Reads t; sorts; keeps the first row; returns a."),
    ],
)
def test_describes_what_a_query_reads_shapes_and_returns(sql: str, dialect: str, expected: str) -> None:
    assert describe_query(sql, dialect) == expected


@pytest.mark.parametrize("sql", ["", "not sql at all (", "SELECT FROM WHERE ((("])
def test_text_that_does_not_parse_has_no_description(sql: str) -> None:
    assert describe_query(sql) == ""


def test_a_deeply_nested_query_has_no_description_rather_than_an_error() -> None:
    nested = "SELECT * FROM (" * 600 + "SELECT 1" + ") AS x" * 600  # sqlglot recurses past Python's limit
    assert describe_query(nested) == ""
