"""An aggregate that ranks rows no GROUP BY makes: the transform (:func:`regrouped`) and the validator's error with
its joins (:func:`ungrouped_aggregate`), as tables of cases; and an aggregate of an enclosing query's column moved
into its subquery (:func:`requalified`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.query.grouping import regrouped, regrouped_readings
from text2sql_dspy.programs.query.requalify import requalified
from text2sql_dspy.programs.source import open_source

DDL = """
CREATE TABLE party (party_id INTEGER PRIMARY KEY, party_name TEXT, region TEXT);
CREATE TABLE member (member_id INTEGER PRIMARY KEY, name TEXT, party_id INTEGER REFERENCES party(party_id));
CREATE TABLE event (event_id INTEGER PRIMARY KEY, party_id INTEGER REFERENCES party(party_id), year INTEGER);
CREATE TABLE checking (custid INTEGER PRIMARY KEY, balance REAL);
CREATE TABLE savings (custid INTEGER PRIMARY KEY REFERENCES checking(custid), balance REAL);
CREATE TABLE hero (hero_id INTEGER PRIMARY KEY, hero_name TEXT);
CREATE TABLE hero_power (hero_id INTEGER REFERENCES hero(hero_id), power TEXT);
INSERT INTO hero VALUES (1, 'Atlas'), (2, 'Bolt'), (3, 'Cyclone'), (4, 'Dusk'), (5, 'Echo'), (6, 'Atlas');
INSERT INTO hero_power VALUES (1, 'flight'), (2, 'speed'), (2, 'strength');
INSERT INTO party VALUES (1, 'Red', 'North'), (2, 'Blue', 'North');
INSERT INTO member VALUES (1, 'Ann', 1), (2, 'Bo', 1), (3, 'Cy', 2);
INSERT INTO event VALUES (1, 1, 2020), (2, 2, 2020), (3, 2, 2021);
INSERT INTO checking VALUES (1, 10), (2, 20);
INSERT INTO savings VALUES (1, 5), (2, 50);
"""


@pytest.fixture
def source(tmp_path: Path):
    path = tmp_path / "parties.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    conn.close()
    return open_source(path)


@pytest.mark.parametrize(("sql", "expected"), [
    # a join ranked by a count it has no group for: grouped by the columns shown
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id ORDER BY COUNT(*) DESC "
     "LIMIT 1",
     "SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id GROUP BY T1.party_name "
     "ORDER BY COUNT(*) DESC LIMIT 1"),
    ("SELECT p.party_name AS name, 1 FROM party AS p JOIN member AS m ON p.party_id = m.party_id "
     "ORDER BY COUNT(m.member_id)",
     "SELECT p.party_name AS name, 1 FROM party AS p JOIN member AS m ON p.party_id = m.party_id GROUP BY p.party_name "
     "ORDER BY COUNT(m.member_id)"),
    # inside a subquery too
    ("SELECT name FROM member WHERE party_id = (SELECT T1.party_id FROM party AS T1 JOIN member AS T2 "
     "ON T1.party_id = T2.party_id ORDER BY COUNT(*) DESC LIMIT 1)",
     "SELECT name FROM member WHERE party_id = (SELECT T1.party_id FROM party AS T1 JOIN member AS T2 "
     "ON T1.party_id = T2.party_id GROUP BY T1.party_id ORDER BY COUNT(*) DESC LIMIT 1)"),
    # left as written
    ("SELECT party_name FROM party ORDER BY COUNT(*) DESC LIMIT 1", None),  # one table: which rows to count?
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id GROUP BY T1.party_name "
     "ORDER BY COUNT(*) DESC", None),  # grouped already
    ("SELECT T1.party_name, COUNT(*) FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id "
     "ORDER BY COUNT(*)", None),  # an aggregate shown: one group
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id "
     "ORDER BY COUNT(*) OVER ()", None),  # a window's
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id "
     "ORDER BY (SELECT COUNT(*) FROM event AS e WHERE e.party_id = T1.party_id)", None),  # a subquery's
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id "
     "WHERE COUNT(*) > 1 ORDER BY COUNT(*)", None),  # grouping would not mend the WHERE
    ("SELECT * FROM party WHERE", None),  # unparseable
])
def test_a_join_ranked_by_an_ungrouped_aggregate_groups_by_the_columns_shown(sql: str, expected: str | None) -> None:
    assert regrouped(sql) == (expected or sql)


@pytest.mark.parametrize(("sql", "message", "hints"), [
    ("SELECT party_name FROM party ORDER BY COUNT(*) DESC LIMIT 1",
     "COUNT(*) in ORDER BY of a query with no GROUP BY: there is no group to count",
     ["to rank each party by how many member rows refer to it: "
      "JOIN member ON member.party_id = party.party_id GROUP BY party.party_id",
      "to rank each party by how many event rows refer to it: "
      "JOIN event ON event.party_id = party.party_id GROUP BY party.party_id",
      "to count the rows of each value shown: GROUP BY party_name"]),
    ("SELECT p.party_name FROM party AS p WHERE COUNT(*) > 1",
     "COUNT(*) in WHERE: an aggregate is never allowed there (HAVING after GROUP BY, or a subquery)",
     ["to rank each party by how many member rows refer to it: "
      "JOIN member ON member.party_id = p.party_id GROUP BY p.party_id",
      "to rank each party by how many event rows refer to it: "
      "JOIN event ON event.party_id = p.party_id GROUP BY p.party_id",
      "to count the rows of each value shown: GROUP BY p.party_name"]),
    ("SELECT year FROM event ORDER BY MAX(event_id)",
     "MAX(event_id) in ORDER BY of a query with no GROUP BY: there is no group to count",
     ["to count the rows of each value shown: GROUP BY year"]),  # nothing refers to event
])
def test_an_ungrouped_aggregate_is_an_error_naming_the_joins_that_give_it_rows(source, sql: str, message: str,
                                                                              hints: list[str]) -> None:
    result = source.validator.validate(sql)
    assert not result.valid
    assert [f.kind for f in result.findings if f.is_error] == [Kind.UNGROUPED_AGGREGATE]
    assert result.errors == [message]
    assert result.suggestions == hints


@pytest.mark.parametrize("sql", [
    "SELECT year, COUNT(*) FROM event GROUP BY year ORDER BY COUNT(*)",
    "SELECT COUNT(*) FROM event ORDER BY COUNT(*)",
    "SELECT party_name FROM party WHERE party_id IN (SELECT party_id FROM member GROUP BY party_id "
    "HAVING COUNT(*) > 1)",
    "SELECT party_name, RANK() OVER (ORDER BY party_id) FROM party",
])
def test_a_grouped_or_aggregate_query_is_no_finding(source, sql: str) -> None:
    assert source.validator.validate(sql).valid


@pytest.mark.parametrize(("sql", "expected"), [
    # an aggregate of the enclosing query's column in a subquery of WHERE: the subquery's own table
    ("SELECT T1.custid FROM checking AS T1 JOIN savings AS T2 ON T1.custid = T2.custid "
     "WHERE T2.balance > (SELECT AVG(T1.balance) FROM savings)",
     "SELECT T1.custid FROM checking AS T1 JOIN savings AS T2 ON T1.custid = T2.custid "
     "WHERE T2.balance > (SELECT AVG(savings.balance) FROM savings)"),
    ("SELECT checking.balance FROM checking JOIN savings ON checking.custid = savings.custid "
     "WHERE savings.balance > (SELECT AVG(checking.balance) FROM savings AS s)",
     "SELECT checking.balance FROM checking JOIN savings ON checking.custid = savings.custid "
     "WHERE savings.balance > (SELECT AVG(s.balance) FROM savings AS s)"),
    # left as written
    ("SELECT custid FROM checking AS c WHERE balance > (SELECT AVG(balance) FROM savings)", None),  # its own already
    ("SELECT c.custid FROM checking AS c WHERE c.balance > (SELECT AVG(c.balance) FROM event)", None),  # no owner
    ("SELECT c.custid FROM checking AS c WHERE c.balance > (SELECT AVG(s.balance + c.balance) FROM savings AS s)",
     None),  # reads its own column too: a correlated aggregate of the subquery
    ("SELECT (SELECT AVG(c.balance) FROM savings) FROM checking AS c", None),  # not in a WHERE or ON
])
def test_an_aggregate_of_the_enclosing_query_in_a_where_subquery_moves_into_it(source, sql: str,
                                                                             expected: str | None) -> None:
    assert requalified(sql, source.catalog) == (expected or sql)


def test_a_drafted_join_runs_once_grouped_and_its_rows_rank_the_values_shown(source) -> None:
    sql = source.runnable("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id "
                          "ORDER BY COUNT(*) DESC LIMIT 1")
    assert source.validator.validate(sql).valid
    assert source.database.execute(sql).rows == [("Red",)]


@pytest.mark.parametrize(("sql", "expected"), [
    # one table ranked by a count it has no group for: joined to each table that refers to it, then grouped by the
    # columns shown
    ("SELECT party_name FROM party ORDER BY COUNT(*) DESC LIMIT 1", [
        "SELECT party.party_name FROM party JOIN member ON member.party_id = party.party_id GROUP BY party.party_id "
        "ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT party.party_name FROM party JOIN event ON event.party_id = party.party_id GROUP BY party.party_id "
        "ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT party_name FROM party GROUP BY party_name ORDER BY COUNT(*) DESC LIMIT 1"]),
    ("SELECT p.party_name, party_id FROM party AS p ORDER BY COUNT(p.party_id)", [
        "SELECT p.party_name, p.party_id FROM party AS p JOIN member ON member.party_id = p.party_id "
        "GROUP BY p.party_id ORDER BY COUNT(p.party_id)",
        "SELECT p.party_name, p.party_id FROM party AS p JOIN event ON event.party_id = p.party_id "
        "GROUP BY p.party_id ORDER BY COUNT(p.party_id)",
        "SELECT p.party_name, party_id FROM party AS p GROUP BY p.party_name, party_id ORDER BY COUNT(p.party_id)"]),
    ("SELECT year FROM event ORDER BY COUNT(*) DESC", [  # nothing refers to event
        "SELECT year FROM event GROUP BY year ORDER BY COUNT(*) DESC"]),
    # none
    ("SELECT T1.party_name FROM party AS T1 JOIN member AS T2 ON T1.party_id = T2.party_id ORDER BY COUNT(*)", []),
    ("SELECT party_name FROM party WHERE COUNT(*) > 1", []),  # an aggregate in WHERE: grouping does not mend it
    ("SELECT party_name FROM party GROUP BY party_name ORDER BY COUNT(*)", []),
    ("SELECT party_name FROM nowhere ORDER BY COUNT(*)", []),  # not a stored table
])
def test_one_table_ranked_by_an_ungrouped_aggregate_is_offered_each_join_that_gives_it_rows(
        source, sql: str, expected: list[str]) -> None:
    assert regrouped_readings(sql, source.catalog) == expected
    assert all(source.validator.validate(reading).valid for reading in expected)


RANKED = "SELECT party_name FROM party ORDER BY COUNT(*) DESC LIMIT 1"
BY_MEMBER = ("SELECT party.party_name FROM party JOIN member ON member.party_id = party.party_id "
             "GROUP BY party.party_id ORDER BY COUNT(*) DESC LIMIT 1")
BY_EVENT = ("SELECT party.party_name FROM party JOIN event ON event.party_id = party.party_id "
            "GROUP BY party.party_id ORDER BY COUNT(*) DESC LIMIT 1")
BY_NAME = "SELECT party_name FROM party GROUP BY party_name ORDER BY COUNT(*) DESC LIMIT 1"


@pytest.mark.parametrize(("sql", "question", "first"), [
    (RANKED, "", BY_MEMBER),  # the catalog's order
    (RANKED, "Which party held the most events?", BY_EVENT),  # the table the question's words name
    (RANKED, "Which party has the most members?", BY_MEMBER),
    ("SELECT year FROM event ORDER BY COUNT(*) DESC LIMIT 1", "Which year had the most events?",
     "SELECT year FROM event GROUP BY year ORDER BY COUNT(*) DESC LIMIT 1"),  # years repeat: a category
    ("SELECT region FROM party ORDER BY COUNT(*) DESC LIMIT 1", "Which region has the most members?",
     "SELECT region FROM party GROUP BY region ORDER BY COUNT(*) DESC LIMIT 1"),  # regions repeat: a category first
    ("SELECT p.region FROM party AS p ORDER BY COUNT(*) DESC", "", "SELECT p.region FROM party AS p GROUP BY p.region "
     "ORDER BY COUNT(*) DESC"),
])
def test_the_reading_offered_first_is_the_join_the_question_names_or_the_category_shown(
        source, sql: str, question: str, first: str) -> None:
    readings = regrouped_readings(sql, source.catalog, question=question,
                                  run=lambda query: source.database.execute(query).rows)
    assert readings[0] == first


@pytest.mark.parametrize(("sql", "expected"), [
    (RANKED, [BY_MEMBER, BY_EVENT, BY_NAME]),  # every name once
    ("SELECT hero_name FROM hero ORDER BY COUNT(*) DESC LIMIT 1", [  # one name in two of six rows: not a category
        "SELECT hero.hero_name FROM hero JOIN hero_power ON hero_power.hero_id = hero.hero_id "
        "GROUP BY hero.hero_id ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT hero_name FROM hero GROUP BY hero_name ORDER BY COUNT(*) DESC LIMIT 1"]),
])
def test_names_that_few_rows_share_are_grouped_last(source, sql: str, expected: list[str]) -> None:
    assert regrouped_readings(sql, source.catalog, run=lambda query: source.database.execute(query).rows) == expected
