"""The lints that tell a wrong answer without a model, table-driven: each row a question (and, for a follow-up, the
query it continues), a query, and the findings expected of one lint; every lint has rows where it must stay quiet."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlglot

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table, introspect_sqlite
from text2sql_dspy.programs.catalog.samples import sampled
from text2sql_dspy.programs.catalog.values import ValueIndex, build_value_index
from text2sql_dspy.programs.db.database import SQLiteDatabase
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.filter_lints import month_name_date, name_as_key, unasked_filter
from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.query.join_lints import (
    always_true_join,
    counted_join_key,
    fan_out,
    negation_over_join,
    off_key_join,
    unlinked_join,
    unused_join,
)
from text2sql_dspy.programs.query.lints import Query, cartesian_join, outer_column
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.question_lints import (
    both_values,
    dropped_filter,
    opaque_id,
    sum_for_count,
    sum_of_key,
    unasked_limit,
    value_not_row,
)

# A student club, as BIRD's student_club: majors named in a lookup table, ISO dates as text and as DATE.
CLUB_DDL = """
CREATE TABLE major (id INTEGER PRIMARY KEY, major_name TEXT NOT NULL, department TEXT NOT NULL);
CREATE TABLE member (id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, city TEXT, position TEXT,
                     link_to_major INTEGER REFERENCES major(id));
CREATE TABLE event (id INTEGER PRIMARY KEY, event_name TEXT, event_date TEXT, type TEXT, status TEXT);
CREATE TABLE attendance (link_to_event INTEGER REFERENCES event(id), link_to_member INTEGER REFERENCES member(id),
                         PRIMARY KEY (link_to_event, link_to_member));
CREATE TABLE budget (id INTEGER PRIMARY KEY, category TEXT, spent REAL, remaining REAL, amount INTEGER,
                     event_ref INTEGER REFERENCES event(id));
CREATE TABLE expense (id INTEGER PRIMARY KEY, expense_description TEXT, expense_date DATE, cost REAL,
                      member_ref INTEGER REFERENCES member(id), budget_ref INTEGER REFERENCES budget(id));
INSERT INTO major VALUES (1, 'Business', 'College of Business'), (2, 'Physics', 'Physics and Astronomy');
INSERT INTO member VALUES (1, 'Sacha', 'Harrison', 'Ramsey', 'Member', 1),
                          (2, 'Luisa', 'Guidi', 'Provo', 'President', 2);
INSERT INTO event VALUES (1, 'October Meeting', '2019-10-08', 'Meeting', 'Open'),
                         (2, 'Spring Social', '2020-03-10', 'Social', 'Closed');
INSERT INTO attendance VALUES (1, 1), (1, 2), (2, 1);
INSERT INTO budget VALUES (1, 'Food', 120.0, -20.0, 100, 1), (2, 'Advertisement', 50.0, 25.0, 75, 2);
INSERT INTO expense VALUES (1, 'Pizza', '2019-10-08', 120.0, 1, 1);
"""


@pytest.fixture(scope="module")
def catalog(tiny_db: Path) -> Catalog:
    return introspect_sqlite(tiny_db)


@pytest.fixture(scope="module")
def club(tmp_path_factory: pytest.TempPathFactory) -> tuple[Catalog, ValueIndex]:
    """The club's catalog, with samples, and its value index."""
    path = tmp_path_factory.mktemp("club") / "club.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(CLUB_DDL)
    conn.close()
    database = SQLiteDatabase(path)
    catalog = sampled(introspect_sqlite(path), database)
    return catalog, build_value_index(database, catalog, progress=False)


def query_of(catalog: Catalog, sql: str, question: str = "", previous: str = "", hint: str = "",
             index: ValueIndex | None = None, dialect: str = "sqlite") -> Query:
    tree = normalize_names(sqlglot.parse_one(sql, read=dialect))
    values = (lambda: index) if index is not None else None
    return Query(tree, sql, catalog, CatalogSchema(catalog), dialect, values, question, previous, hint)


JOINED = "FROM users u JOIN blocks b ON b.user_id = u.id"  # one user, many blocks
CASES = [
    # a join condition that is always true, or a join with none
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b ON u.id = u.id", [Kind.ALWAYS_TRUE_JOIN]),
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b ON u.id = u.organization_id",
     [Kind.ALWAYS_TRUE_JOIN]),
    (always_true_join, "", f"SELECT u.email {JOINED}", []),
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b USING (id)", []),
    (cartesian_join, "", "SELECT u.email FROM users u JOIN blocks b", [Kind.CARTESIAN_JOIN]),
    # a subquery that selects the enclosing query's column: true of every row
    (outer_column, "", "SELECT email FROM users WHERE organization_id IN (SELECT organization_id FROM blocks)",
     [Kind.OUTER_COLUMN]),
    (outer_column, "", "SELECT u.email FROM users u WHERE u.id = (SELECT u.id FROM blocks WHERE reason = 'spam')",
     [Kind.OUTER_COLUMN]),
    (outer_column, "", "SELECT name FROM organizations WHERE id IN (SELECT organization_id FROM users "
     "WHERE id IN (SELECT organization_id FROM blocks))", [Kind.OUTER_COLUMN]),
    (outer_column, "", "SELECT (SELECT u.email FROM blocks LIMIT 1) FROM users u", [Kind.OUTER_COLUMN]),
    (outer_column, "", "SELECT email FROM users WHERE id IN (SELECT user_id FROM blocks)", []),
    (outer_column, "", "SELECT email FROM users u WHERE id IN (SELECT b.user_id FROM blocks b WHERE b.user_id = u.id)",
     []),
    (outer_column, "", "SELECT email FROM users u WHERE EXISTS (SELECT u.id FROM blocks b WHERE b.user_id = u.id)", []),
    (outer_column, "", "SELECT d.n FROM (SELECT organization_id AS n FROM users) AS d", []),
    (outer_column, "", "WITH o AS (SELECT id FROM organizations) SELECT email FROM users "
     "WHERE organization_id IN (SELECT id FROM o)", []),
    (outer_column, "", "SELECT email FROM users WHERE organization_id IN (SELECT nothing FROM blocks)", []),
    (outer_column, "", "SELECT email FROM users UNION SELECT reason FROM blocks", []),
    # COUNT/SUM of the one side over a one-to-many join
    ("fan", "How many users were blocked?", f"SELECT count(u.id) {JOINED}", [Kind.FAN_OUT]),
    ("fan", "How many users were blocked?", f"SELECT count(DISTINCT u.id) {JOINED}", []),
    ("fan", "How many blocks?", f"SELECT count(b.id) {JOINED}", []),
    ("fan", "Blocks per user?", f"SELECT u.email, count(u.id) {JOINED} GROUP BY u.id", []),
    # a many-side table joined and never read
    (unused_join, "Which users were ever blocked?", f"SELECT u.email {JOINED}", [Kind.UNUSED_JOIN]),
    (unused_join, "Which users were ever blocked?", f"SELECT DISTINCT u.email {JOINED}", []),
    (unused_join, "Why were users blocked?", f"SELECT u.email, b.reason {JOINED}", []),
    (unused_join, "Users still blocked?", f"SELECT u.email {JOINED} WHERE b.unblocked_at IS NULL", []),
    (unused_join, "Which organization is each user in?",
     "SELECT u.email FROM users u JOIN organizations o ON u.organization_id = o.id", []),  # many-to-one
    # "not", answered with <> over a one-to-many join
    (negation_over_join, "Which users were not blocked for failed logins?",
     f"SELECT u.email {JOINED} WHERE b.reason <> 'too_many_failed_logins'", [Kind.NEGATION_OVER_JOIN]),
    (negation_over_join, "Which users were blocked for a reason other than failed logins?",
     f"SELECT u.email {JOINED} WHERE b.reason <> 'too_many_failed_logins'", []),
    (negation_over_join, "Which users were not blocked for failed logins?",
     "SELECT email FROM users WHERE id NOT IN (SELECT user_id FROM blocks WHERE reason = 'too_many_failed_logins')",
     []),
    (negation_over_join, "Which blocks are not lifted?", f"SELECT b.id, b.reason {JOINED} WHERE b.reason <> 'x'", []),
    # "both", answered with IN/OR on one row
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status IN ('active', "
     "'suspended')",
     [Kind.BOTH_VALUES]),
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'active' "
     "OR u.status = 'suspended'", [Kind.BOTH_VALUES]),
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'active' INTERSECT "
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'suspended'", []),
    (both_values, "Which users are active or suspended?",
     "SELECT email FROM users WHERE status IN ('active', 'suspended')",
     []),
    # a LIMIT nobody asked for
    (unasked_limit, "List the first names of users who logged in.", "SELECT full_name FROM users LIMIT 1",
     [Kind.UNASKED_LIMIT]),
    (unasked_limit, "Which user logged in last?", "SELECT full_name FROM users ORDER BY last_login_at DESC LIMIT 1",
     []),
    (unasked_limit, "Show 2 users.", "SELECT full_name FROM users LIMIT 2", []),
    (unasked_limit, "", "SELECT full_name FROM users LIMIT 1", []),
    # SUM of ids for "how many"
    (sum_of_key, "How many login attempts were there?", "SELECT sum(id) FROM login_attempts", [Kind.SUM_OF_KEY]),
    (sum_of_key, "How many successful login attempts were there?", "SELECT sum(success) FROM login_attempts", []),
    (sum_of_key, "What is the total of the ids?", "SELECT sum(id) FROM login_attempts", []),
    # the extreme value where its row is asked
    (value_not_row, "Which user logged in most recently?", "SELECT max(last_login_at) FROM users",
     [Kind.VALUE_NOT_ROW]),
    (value_not_row, "What is the latest login time?", "SELECT max(last_login_at) FROM users", []),
    (value_not_row, "Which user logged in most recently?",
     "SELECT full_name FROM users ORDER BY last_login_at DESC LIMIT 1", []),
    # a follow-up that drops a filter of the turn it continues
    ("dropped", "Which of them are suspended?", "SELECT email FROM users WHERE status = 'suspended'",
     [Kind.DROPPED_FILTER]),
    ("dropped", "Which of them are suspended?",
     "SELECT email FROM users WHERE organization_id = 1 AND status = 'suspended'", []),
    ("dropped", "What about all organizations?", "SELECT email FROM users WHERE status = 'suspended'", []),
    ("dropped", "How many organizations are there?", "SELECT count(*) FROM organizations", []),
    # ... or leaves its rows behind: reads none of the tables it chose its rows from, keeps none of their columns
    ("dropped", "How many times did they try to log in?", "SELECT count(*) FROM login_attempts", [Kind.DROPPED_FILTER]),
    ("dropped", "How many times did they try to log in?", "SELECT count(*) FROM login_attempts a JOIN users u "
     "ON a.user_id = u.id WHERE u.organization_id = 1", []),
    ("dropped", "How many times did they try to log in?", "SELECT count(*) FROM login_attempts WHERE user_id IN "
     "(SELECT id FROM users WHERE organization_id = 1)", []),
    ("dropped", "How many login attempts are there?", "SELECT count(*) FROM login_attempts", []),  # not referred back
    # the rows below read the club (CLUB_DDL); a question may come with its hint, as (question, hint)
    # a foreign key joined to a column other than the key it references
    ("off_key", "", "SELECT x.cost FROM event e JOIN expense x ON e.id = x.budget_ref", [Kind.OFF_KEY_JOIN]),
    ("off_key", "", "SELECT x.cost FROM budget b JOIN expense x ON b.event_ref = x.budget_ref", [Kind.OFF_KEY_JOIN]),
    ("off_key", "", "SELECT m.first_name FROM member m, major j WHERE m.link_to_major = j.department",
     [Kind.OFF_KEY_JOIN]),
    ("off_key", "", "SELECT x.cost FROM budget b JOIN expense x ON x.budget_ref = b.id", []),
    ("off_key", "", "SELECT x.cost FROM budget b JOIN expense x ON b.id = x.budget_ref JOIN event e ON "
     "b.event_ref = e.id", []),
    ("off_key", "", "SELECT a.link_to_event FROM attendance a JOIN budget b ON a.link_to_event = b.event_ref", []),
    ("off_key", "", "SELECT x.cost FROM expense x JOIN member m ON m.id = x.member_ref", []),
    # COUNT of the join's foreign key: each matching row, not each row of the one side
    ("counted", "How many events had a food budget?", "SELECT count(b.event_ref) FROM event e JOIN budget b ON "
     "e.id = b.event_ref WHERE b.category = 'Food'", [Kind.COUNTED_JOIN_KEY]),
    ("counted", "How many members spent money?",
     "SELECT count(x.member_ref) FROM member m JOIN expense x ON x.member_ref = m.id", [Kind.COUNTED_JOIN_KEY]),
    ("counted", "", "SELECT count(a.link_to_member) FROM member m JOIN attendance a ON a.link_to_member = m.id "
     "JOIN major j ON m.link_to_major = j.id WHERE j.major_name = 'Business'", [Kind.COUNTED_JOIN_KEY]),
    ("counted", "How many events had a food budget?", "SELECT count(DISTINCT b.event_ref) FROM event e JOIN budget b "
     "ON e.id = b.event_ref WHERE b.category = 'Food'", []),
    ("counted", "How many budgets does each event have?", "SELECT e.event_name, count(b.event_ref) FROM event e "
     "JOIN budget b ON e.id = b.event_ref GROUP BY e.id", []),
    ("counted", "How many budgets are for events?",
     "SELECT count(b.event_ref) FROM event e JOIN budget b ON e.id = b.event_ref", []),
    ("counted", "How many times did Sacha attend?", "SELECT count(a.link_to_member) FROM member m JOIN attendance a "
     "ON a.link_to_member = m.id", []),
    ("counted", "How many members attended the October Meeting?", "SELECT count(a.link_to_event) FROM event e JOIN "
     "attendance a ON a.link_to_event = e.id WHERE e.event_name = 'October Meeting'", []),
    ("counted", "How many members?", "SELECT count(m.id) FROM member m JOIN attendance a ON a.link_to_member = m.id",
     [Kind.FAN_OUT]),  # fan_out's, not this rule's
    # SUM of a measure for "how many"
    ("sum_count", "How many of the budgets had exceeded?",
     "SELECT sum(CASE WHEN remaining < 0 THEN amount ELSE 0 END) FROM budget", [Kind.SUM_FOR_COUNT]),
    ("sum_count", "How many budgets are for food?", "SELECT sum(amount) FROM budget WHERE category = 'Food'",
     [Kind.SUM_FOR_COUNT]),
    ("sum_count", "What is the number of expenses for pizza?",
     "SELECT sum(iif(expense_description = 'Pizza', cost, 0)) FROM expense", [Kind.SUM_FOR_COUNT]),
    ("sum_count", "How many of the budgets had exceeded?",
     "SELECT sum(CASE WHEN remaining < 0 THEN 1 ELSE 0 END) FROM budget", []),
    ("sum_count", "How many dollars were spent on food?", "SELECT sum(spent) FROM budget WHERE category = 'Food'", []),
    ("sum_count", "How many dollars does the pizza cost?", "SELECT sum(cost) FROM expense", []),
    ("sum_count", "What is the total amount budgeted for food?", "SELECT sum(amount) FROM budget", []),
    ("sum_count", "How many events were budgeted for?", "SELECT sum(event_ref) FROM budget", []),  # sum_of_key's
    # a filter the question does not ask for
    ("unasked", "How many events did Sacha Harrison attend?", "SELECT count(*) FROM member m JOIN attendance a ON "
     "a.link_to_member = m.id WHERE m.first_name = 'Sacha' AND m.last_name = 'Harrison' AND m.city = 'Ramsey'",
     [Kind.UNASKED_FILTER]),
    ("unasked", "List the events.", "SELECT event_name FROM event WHERE status IN ('Open', 'Closed')",
     [Kind.UNASKED_FILTER]),
    ("unasked", ("How many majors are there?", "majors of the college"),
     "SELECT count(*) FROM major WHERE department = 'Physics and Astronomy'", [Kind.UNASKED_FILTER]),
    ("unasked", "List the open events.", "SELECT event_name FROM event WHERE status = 'Open'", []),
    ("unasked", "Which members are from the city of Provo?", "SELECT first_name FROM member WHERE city = 'Provo'", []),
    ("unasked", ("How many events were held?", "held refers to status = 'Closed'"),
     "SELECT count(*) FROM event WHERE status = 'Closed'", []),
    ("unasked", "Which members hold a position?", "SELECT first_name FROM member WHERE position = 'President'", []),
    ("unasked", "List the meetings.", "SELECT event_name FROM event WHERE type = 'Meeting'", []),
    ("unasked", "", "SELECT event_name FROM event WHERE status = 'Open'", []),
    ("unasked", "Which events were in 2019?", "SELECT event_name FROM event WHERE event_date = '2019-10-08'", []),
    # a name compared with a key column
    ("name_key", "How many members major in Business?",
     "SELECT count(*) FROM member WHERE link_to_major = 'Business'", [Kind.NAME_AS_KEY]),
    ("name_key", "", "SELECT count(*) FROM member m JOIN major j ON m.link_to_major = j.id WHERE j.id IN "
     "('Physics', 'Business')", [Kind.NAME_AS_KEY, Kind.NAME_AS_KEY]),
    ("name_key", "What did Pizza cost?", "SELECT cost FROM expense WHERE budget_ref = 'Food'", [Kind.NAME_AS_KEY]),
    ("name_key", "How many members major in Business?", "SELECT count(*) FROM member m JOIN major j "
     "ON m.link_to_major = j.id WHERE j.major_name = 'Business'", []),
    ("name_key", "", "SELECT count(*) FROM member WHERE link_to_major = '1'", []),
    ("name_key", "", "SELECT count(*) FROM member WHERE link_to_major = 'Chemistry'", []),  # held nowhere
    ("name_key", "", "SELECT count(*) FROM member WHERE city = 'Ramsey'", []),  # no key
    # a month name matched against ISO dates
    ("month", "Which events were in October?", "SELECT event_name FROM event WHERE event_date LIKE '%October%'",
     [Kind.MONTH_NAME_DATE]),
    ("month", "", "SELECT cost FROM expense WHERE expense_date LIKE '%oct 2019%'", [Kind.MONTH_NAME_DATE]),
    ("month", "", "SELECT e.event_name FROM event e WHERE e.event_date LIKE '%Mar%' OR e.status = 'Open'",
     [Kind.MONTH_NAME_DATE]),
    ("month", "", "SELECT event_name FROM event WHERE event_date LIKE '____-10-%'", []),
    ("month", "", "SELECT event_name FROM event WHERE event_name LIKE '%October%'", []),
    ("month", "", "SELECT event_name FROM event WHERE strftime('%m', event_date) = '10'", []),
]  # fmt: skip
PREVIOUS = "SELECT email FROM users WHERE organization_id = 1"
NAMED = {"fan": fan_out, "dropped": dropped_filter}
CLUB = {"off_key": off_key_join, "counted": counted_join_key, "sum_count": sum_for_count, "unasked": unasked_filter,
        "name_key": name_as_key, "month": month_name_date}


@pytest.mark.parametrize(("lint", "question", "sql", "kinds"), CASES)
def test_lints(catalog: Catalog, club: tuple[Catalog, ValueIndex], lint: object, question: str | tuple[str, str],
               sql: str, kinds: list[Kind]) -> None:
    question, hint = question if isinstance(question, tuple) else (question, "")
    if lint in CLUB:
        rules = [CLUB[lint], fan_out] if lint == "counted" else [CLUB[lint]]
        query = query_of(club[0], sql, question, hint=hint, index=club[1])
    else:
        rules = [NAMED.get(lint, lint) if isinstance(lint, str) else lint]
        query = query_of(catalog, sql, question, PREVIOUS if lint == "dropped" else "")
    found = [f for rule in rules for f in rule(query)]
    assert [f.kind for f in found] == kinds, [f.message for f in found]
    assert all(f.message and not f.is_error for f in found)


def test_every_lint_kind_has_a_case() -> None:
    lint_kinds = {Kind.ALWAYS_TRUE_JOIN, Kind.FAN_OUT, Kind.UNUSED_JOIN, Kind.NEGATION_OVER_JOIN, Kind.BOTH_VALUES,
                  Kind.UNASKED_LIMIT, Kind.SUM_OF_KEY, Kind.VALUE_NOT_ROW, Kind.DROPPED_FILTER, Kind.UNASKED_FILTER,
                  Kind.OFF_KEY_JOIN, Kind.COUNTED_JOIN_KEY, Kind.SUM_FOR_COUNT, Kind.NAME_AS_KEY, Kind.MONTH_NAME_DATE,
                  Kind.OUTER_COLUMN}
    assert lint_kinds <= {k for *_, kinds in CASES for k in kinds}
    assert {Kind.UNLINKED_JOIN} <= {k for *_, kinds in UNLINKED for k in kinds}


def table(name: str, *columns: str, key: str = "id", refs: dict[str, str] | None = None) -> Table:
    return Table(name=name, columns=[Column(name=key, primary_key=True),
                                     *(Column(name=c, references=(refs or {}).get(c)) for c in columns)])


# two parts a merged database could hold (a school's, a clinic's), and a table no key links
SCHOOLS = Catalog(db_id="merged", tables=[
    table("school__student", "name", "dorm_id", refs={"dorm_id": "school__dorm.id"}),
    table("school__dorm", "dorm_name"),
    table("school__grade", "student_id", "score", refs={"student_id": "school__student.id"}),
    table("clinic__pet", "owner_id", "pet_type", refs={"owner_id": "clinic__owner.id"}),
    table("clinic__owner", "name", "student_id"),
    table("notes", "student_id", "text"),
])
UNLINKED = [
    ("SELECT p.pet_type FROM school__student s JOIN clinic__pet p ON p.owner_id = s.id", [Kind.UNLINKED_JOIN]),
    ("SELECT s.name FROM school__student s, clinic__owner o WHERE o.student_id = s.id", [Kind.UNLINKED_JOIN]),
    ("SELECT s.name FROM school__student s JOIN school__dorm d ON s.dorm_id = d.id", []),
    # linked through student
    ("SELECT d.dorm_name FROM school__grade g JOIN school__dorm d ON g.student_id = d.id", []),
    ("SELECT s.name FROM school__student s JOIN notes n ON n.student_id = s.id", []),  # notes declares no key
    ("SELECT s.name FROM school__student s JOIN clinic__pet p ON s.name = 'x'", []),  # not a join of two columns
    ("SELECT a.name FROM school__student a JOIN school__student b ON a.dorm_id = b.dorm_id", []),  # one table
]  # fmt: skip


@pytest.mark.parametrize(("sql", "kinds"), UNLINKED)
def test_unlinked_join(sql: str, kinds: list[Kind]) -> None:
    found = unlinked_join(query_of(SCHOOLS, sql))
    assert [f.kind for f in found] == kinds, [f.message for f in found]
    assert all(f.message and not f.is_error for f in found)


RECORD_IDS = ["rec1x5AbCdEf12", "rec9Zz81kLmN3q", "recQ2w3e4r5t6y"]
PEOPLE = Catalog(db_id="crm", tables=[
    Table(name="person", columns=[Column(name="id", primary_key=True, samples=RECORD_IDS), Column(name="name")]),
    Table(name="meeting", columns=[Column(name="id", type="INTEGER", primary_key=True),
                                   Column(name="person_ref", references="person.id", samples=RECORD_IDS[:2])]),
])


@pytest.mark.parametrize(("question", "sql", "kinds"), [
    ("How many meetings did Ann Lee attend?", f"SELECT count(*) FROM meeting WHERE person_ref = '{RECORD_IDS[0]}'",
     [Kind.OPAQUE_ID]),
    (f"How many meetings did {RECORD_IDS[0]} attend?",
     f"SELECT count(*) FROM meeting WHERE person_ref = '{RECORD_IDS[0]}'", []),  # the question gives the id
    ("How many meetings did Ann Lee attend?",
     "SELECT count(*) FROM meeting m JOIN person p ON m.person_ref = p.id WHERE p.name = 'Ann Lee'", []),
])
def test_an_id_copied_from_the_samples(question: str, sql: str, kinds: list[Kind]) -> None:
    assert [f.kind for f in opaque_id(query_of(PEOPLE, sql, question))] == kinds


def test_opaque_ids_show_their_shape_not_their_values() -> None:
    rendered = PEOPLE.table("person").render()
    assert "-- opaque ids (14 characters); compare only with ids the question gives" in rendered
    assert RECORD_IDS[0] not in rendered and "'rec" not in rendered  # no id, nor a start of one to continue
    assert PEOPLE.table("person").column("id").opaque and not PEOPLE.table("person").column("name").opaque


@pytest.mark.parametrize(("rule", "sql", "dialect", "message"), [
    (off_key_join, "SELECT x.cost FROM event e JOIN expense x ON e.id = x.budget_ref", "sqlite",
     "expense.budget_ref references budget.id, not event.id: join through budget"),
    (name_as_key, "SELECT count(*) FROM member WHERE link_to_major = 'Business'", "sqlite",
     "'Business' is compared with the key member.link_to_major; it is a value of major.major_name: join major and "
     "filter on major_name"),
    (month_name_date, "SELECT event_name FROM event WHERE event_date LIKE '%October%'", "sqlite",
     "event_date holds ISO dates ('2019-10-08'): match the month with strftime('%m', event_date) = '10' "
     "(or event_date LIKE '____-10-%')"),
    (month_name_date, "SELECT event_name FROM event WHERE event_date LIKE '%Oct%'", "postgres",
     "event_date holds ISO dates ('2019-10-08'): match the month with event_date LIKE '____-10-%'"),
    (outer_column,
     "SELECT cost FROM expense WHERE budget_ref IN (SELECT budget_ref FROM budget WHERE category = 'Food')", "sqlite",
     "the subquery selects budget_ref, which budget does not have: it reads the enclosing query's row, so "
     "comparing with it holds for every row; select the subquery's own column (budget.id, which expense.budget_ref "
     "references)"),
    (outer_column, "SELECT cost FROM expense WHERE member_ref IN (SELECT member_ref FROM budget)", "sqlite",
     "the subquery selects member_ref, which budget does not have: it reads the enclosing query's row, so comparing "
     "with it holds for every row; select the subquery's own column"),
])  # fmt: skip
def test_what_the_club_lints_say(club: tuple[Catalog, ValueIndex], rule: object, sql: str, dialect: str,
                                 message: str) -> None:
    assert [f.message for f in rule(query_of(club[0], sql, index=club[1], dialect=dialect))] == [message]


def test_a_name_compared_with_a_foreign_key_without_a_value_index(club: tuple[Catalog, ValueIndex]) -> None:
    sql = "SELECT count(*) FROM member WHERE link_to_major = 'Business'"
    [finding] = name_as_key(query_of(club[0], sql))
    assert finding.message == ("'Business' is compared with the key member.link_to_major, which holds ids: join major "
                               "and filter on the column that names it")
    assert name_as_key(query_of(club[0], "SELECT count(*) FROM member WHERE id = 'Business'")) == []


def test_an_unasked_filter_names_its_literal_for_dropping(club: tuple[Catalog, ValueIndex]) -> None:
    sql = "SELECT count(*) FROM member WHERE city = 'Ramsey' AND last_name = 'Harrison'"
    [finding] = unasked_filter(query_of(club[0], sql, "How many members named Harrison?"))
    assert (finding.message, finding.where) == (
        "filters city = 'Ramsey', which the question does not ask for: leave the filter out", "'Ramsey'")
    follow_up = query_of(club[0], sql, "How many are named Harrison?", "SELECT * FROM member WHERE city = 'Ramsey'")
    assert unasked_filter(follow_up) == []  # the turn it continues asked for it
