"""The question-against-query features (``agents/asked.py``): what the question asks for that the query does not do."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.agents.asked import ASKED, asked_features


@pytest.mark.parametrize(
    ("question", "sql", "expected"),
    [
        ("Which singer is the oldest?", "SELECT name FROM singer", {"unmet: extreme": 1.0}),
        ("Which singer is the oldest?", "SELECT name FROM singer ORDER BY age DESC LIMIT 1", {"unmet: extreme": 0.0}),
        ("What is the maximum age?", "SELECT max(age) FROM singer", {"unmet: extreme": 0.0}),
        ("How many singers does each country have?", "SELECT count(*) FROM singer", {"unmet: each": 1.0}),
        ("How many singers does each country have?", "SELECT country, count(*) FROM singer GROUP BY country",
         {"unmet: each": 0.0}),
        ("Which stadiums had no concert?", "SELECT name FROM stadium", {"unmet: negation": 1.0}),
        ("Which stadiums had no concert?",
         "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)", {"unmet: negation": 0.0}),
        ("Which singers are not French?", "SELECT name FROM singer WHERE country != 'France'",
         {"unmet: negation": 0.0}),
        ("Which pets weigh more than 10?", "SELECT petid FROM pets WHERE weight > 5", {"unmet: number": 1.0}),
        ("Which pets weigh more than 10?", "SELECT petid FROM pets WHERE weight > 10.0", {"unmet: number": 0.0}),
        ("Concerts in 2014?", "SELECT * FROM concert WHERE date LIKE '2014-%'", {"unmet: number": 0.0}),
        ("List the different countries.", "SELECT country FROM singer", {"unmet: distinct": 1.0}),
        ("List the different countries.", "SELECT DISTINCT country FROM singer", {"unmet: distinct": 0.0}),
        ("Names sorted by age.", "SELECT name FROM singer", {"unmet: order": 1.0}),
        ("What is the average age?", "SELECT sum(age) / count(*) FROM singer", {"unmet: average": 1.0}),
        ("What is the average age?", "SELECT avg(age) FROM singer", {"unmet: average": 0.0}),
        ("What are the singers' names and ages?", "SELECT name, age FROM singer", {"named_share": 1.0}),
        ("What are the singers' names?", "SELECT name, song_release_year FROM singer", {"named_share": 0.5}),
        ("Which owner has the most pets?", "SELECT OwnerName FROM owners", {"named_share": 1.0}),
        ("How many singers?", "SELECT count(*) FROM singer", {"named_share": 1.0}),  # no column named at all
        ("Which singer is the oldest?", "SELEC name FRM", {name: 1.0 if name == "named_share" else 0.0
                                                           for name in ASKED}),  # does not parse: nothing counted
    ],
)
def test_asked_features(question: str, sql: str, expected: dict[str, float]) -> None:
    found = asked_features(question, sql)
    assert set(found) == set(ASKED)
    assert {name: found[name] for name in expected} == expected
