"""The tables a query reads (:func:`tables_read`): one table of inputs and expected sets."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.query.tables_read import tables_read


@pytest.mark.parametrize(
    ("sql", "dialect", "expected"),
    [
        ("SELECT name FROM users", "sqlite", {"users"}),
        ("SELECT u.name FROM Users AS u JOIN orgs o ON o.id = u.org_id", "sqlite", {"users", "orgs"}),
        ("SELECT 1", "sqlite", set()),
        ("not sql at all (", "sqlite", set()),
        ("", "sqlite", set()),
        # CTE names are not tables, whatever their case; the tables inside them are
        ("WITH recent AS (SELECT id FROM users) SELECT id FROM recent", "sqlite", {"users"}),
        ("WITH Recent AS (SELECT id FROM users) SELECT id FROM RECENT", "sqlite", {"users"}),
        (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3) SELECT n FROM c",
            "sqlite",
            set(),
        ),
        # a CTE that shadows a table hides it; the table of the same name inside the CTE is read
        ("WITH users AS (SELECT * FROM users WHERE id > 1) SELECT * FROM users", "sqlite", {"users"}),
        # a CTE is visible only below its WITH: the same name in a sibling query is a table
        ("SELECT * FROM (WITH t AS (SELECT 1 AS a) SELECT a FROM t) x JOIN t ON 1", "sqlite", {"t"}),
        # derived tables, subqueries, set operations
        ("SELECT * FROM (SELECT a FROM t1) x WHERE a IN (SELECT b FROM t2)", "sqlite", {"t1", "t2"}),
        ("SELECT name FROM a UNION SELECT name FROM b EXCEPT SELECT name FROM c", "sqlite", {"a", "b", "c"}),
        ("SELECT (SELECT max(x) FROM t3 WHERE t3.id = t.id) FROM t", "sqlite", {"t", "t3"}),
        # table-valued functions are not tables
        ("SELECT value FROM json_each('[1, 2]')", "sqlite", set()),
        ("SELECT j.value FROM users u, json_each(u.tags) j", "sqlite", {"users"}),
        # schemas: a default schema reads as the bare name, another one stays in the name
        ("SELECT * FROM main.users", "sqlite", {"users"}),
        ("SELECT * FROM public.users JOIN sales.orders ON 1", "postgres", {"users", "sales.orders"}),
        ("SELECT * FROM main.users", "duckdb", {"users"}),
        ("SELECT * FROM Sales.Orders", "sqlite", {"sales.orders"}),
        # several statements: each one's tables
        ("SELECT * FROM a; SELECT * FROM b", "sqlite", {"a", "b"}),
    ],
)
def test_tables_read(sql: str, dialect: str, expected: set[str]) -> None:
    assert tables_read(sql, dialect) == expected
