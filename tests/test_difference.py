"""How two readings differ, in words, read off their syntax trees (programs/query/difference.py): a table of cases."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.query.difference import differences


@pytest.mark.parametrize(("a", "b", "only_a", "only_b"), [
    ("SELECT count(*) FROM plant WHERE status = 'Planned'",
     "SELECT count(*) FROM plant WHERE status = 'Under Construction'",
     ["keeps rows where status = 'Planned'"], ["keeps rows where status = 'Under Construction'"]),
    ("SELECT count(*) FROM logins", "SELECT count(DISTINCT l.user_id) FROM logins AS l",
     ["returns COUNT(*)"], ["returns COUNT(DISTINCT user_id)"]),
    ("SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.a_id WHERE T2.x > 3 AND T1.y = 1 ORDER BY T1.name DESC "
     "LIMIT 5",
     "SELECT name FROM a WHERE y = 1",  # aliases aside, the shared parts are not differences
     ["reads b", "keeps rows where x > 3", "sorts by name DESC", "keeps the first 5 rows"], []),
    ("SELECT country, count(*) FROM plant GROUP BY country HAVING count(*) > 2", "SELECT DISTINCT country FROM plant",
     ["returns COUNT(*)", "groups by country", "keeps groups where COUNT(*) > 2"], ["drops repeated rows (DISTINCT)"]),
    ("SELECT 1", "SELECT 1", [], []),
    ("not sql at all (", "SELECT 1", [], []),  # one side does not parse: nothing to say
])
def test_differences(a: str, b: str, only_a: list[str], only_b: list[str]) -> None:
    assert differences(a, b) == (only_a, only_b)
