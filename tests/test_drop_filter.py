"""A query less one filter (:func:`~text2sql_dspy.programs.query.drop_filter.without_filter`), as a table."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.query.drop_filter import literal_of, without_filter

CASES = [
    ("SELECT name FROM event WHERE type = 'Meeting' AND city = 'Ramsey'", "Ramsey",
     "SELECT name FROM event WHERE type = 'Meeting'"),
    ("SELECT name FROM event WHERE city = 'Ramsey'", "ramsey", "SELECT name FROM event"),
    ("SELECT name FROM event WHERE a = 1 AND city IN ('Ramsey') AND b = 2", "Ramsey",
     "SELECT name FROM event WHERE a = 1 AND b = 2"),
    ("SELECT name FROM event WHERE city LIKE '%Ramsey%' AND a = 1", "Ramsey", "SELECT name FROM event WHERE a = 1"),
    ("SELECT name FROM e WHERE id IN (SELECT e_id FROM m WHERE city = 'Ramsey')", "Ramsey",
     "SELECT name FROM e WHERE id IN (SELECT e_id FROM m)"),
    # left alone: no such filter; one value among several; a filter under OR
    ("SELECT name FROM event WHERE city = 'Ramsey'", "Paris", None),
    ("SELECT name FROM event WHERE city IN ('Ramsey', 'Paris')", "Ramsey", None),
    ("SELECT name FROM event WHERE city = 'Ramsey' OR type = 'Meeting'", "Ramsey", None),
    ("SELECT name FROM", "Ramsey", None),
]


@pytest.mark.parametrize(("sql", "literal", "expected"), CASES)
def test_without_filter(sql: str, literal: str, expected: str | None) -> None:
    assert without_filter(sql, literal) == expected


@pytest.mark.parametrize(("where", "literal"), [
    ("'Ramsey'", "Ramsey"), ("city = 'Ramsey'", "Ramsey"), ("Ramsey", "Ramsey"), ("'O''Neil'", "O'Neil"),
])
def test_literal_of_a_findings_where(where: str, literal: str) -> None:
    assert literal_of(where) == literal
