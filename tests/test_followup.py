"""The follow-up features (``agents/followup.py``): what a follow-up's query keeps, adds and drops of the query
before."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.agents.followup import FOLLOW_UP, follow_up_features

BEFORE = "SELECT name FROM singer WHERE country = 'France' AND age > 30"


@pytest.mark.parametrize(
    ("sql", "previous", "expected"),
    [
        ("SELECT name FROM singer", "", dict.fromkeys(FOLLOW_UP, 0.0)),  # a first question
        (BEFORE, BEFORE, {"follow-up": 1.0, "follow-up: unchanged": 1.0, "follow-up: kept": 1.0,
                          "follow-up: added": 0.0, "follow-up: filters dropped": 0.0}),
        ("SELECT name FROM singer WHERE country = 'France' AND age > 30 ORDER BY age", BEFORE,
         {"follow-up: unchanged": 0.0, "follow-up: kept": 1.0, "follow-up: added": 1.0,
          "follow-up: filters dropped": 0.0, "follow-up: tables dropped": 0.0}),
        ("SELECT name, age FROM singer WHERE country = 'France'", BEFORE,  # one filter of two dropped
         {"follow-up: kept": 0.75, "follow-up: added": 1.0, "follow-up: filters dropped": 0.5}),
        ("SELECT count(*) FROM concert", BEFORE,  # left the conversation
         {"follow-up: kept": 0.0, "follow-up: filters dropped": 1.0, "follow-up: tables dropped": 1.0}),
        ("SELEC name FRM", BEFORE, {"follow-up": 1.0, "follow-up: kept": 0.0, "follow-up: unchanged": 0.0}),
        (BEFORE, "not sql at all (", {"follow-up": 1.0, "follow-up: kept": 0.0}),
        ("SELECT name FROM singer", "SELECT name FROM singer ORDER BY age",  # no filter before: none dropped
         {"follow-up: filters dropped": 0.0, "follow-up: tables dropped": 0.0, "follow-up: kept": 2 / 3}),
    ],
)
def test_follow_up_features(sql: str, previous: str, expected: dict[str, float]) -> None:
    found = follow_up_features(sql, previous)
    assert set(found) == set(FOLLOW_UP)
    assert {name: found[name] for name in expected} == expected
