"""The lints that tell a wrong answer without a model, table-driven: each row a question (and, for a follow-up, the
query it continues), a query, and the findings expected of one lint; every lint has rows where it must stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table, introspect_sqlite
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.query.join_lints import always_true_join, fan_out, negation_over_join, unused_join
from text2sql_dspy.programs.query.lints import Query, cartesian_join
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.question_lints import (
    both_values, dropped_filter, opaque_id, sum_of_key, unasked_limit, value_not_row,
)


@pytest.fixture(scope="module")
def catalog(tiny_db: Path) -> Catalog:
    return introspect_sqlite(tiny_db)


def query_of(catalog: Catalog, sql: str, question: str = "", previous: str = "") -> Query:
    tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    return Query(tree, sql, catalog, CatalogSchema(catalog), "sqlite", None, question, previous)


JOINED = "FROM users u JOIN blocks b ON b.user_id = u.id"  # one user, many blocks
CASES = [
    # a join condition that is always true, or a join with none
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b ON u.id = u.id", [Kind.ALWAYS_TRUE_JOIN]),
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b ON u.id = u.organization_id",
     [Kind.ALWAYS_TRUE_JOIN]),
    (always_true_join, "", f"SELECT u.email {JOINED}", []),
    (always_true_join, "", "SELECT u.email FROM users u JOIN blocks b USING (id)", []),
    (cartesian_join, "", "SELECT u.email FROM users u JOIN blocks b", [Kind.CARTESIAN_JOIN]),
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
     "SELECT email FROM users WHERE id NOT IN (SELECT user_id FROM blocks WHERE reason = 'too_many_failed_logins')", []),
    (negation_over_join, "Which blocks are not lifted?", f"SELECT b.id, b.reason {JOINED} WHERE b.reason <> 'x'", []),
    # "both", answered with IN/OR on one row
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status IN ('active', 'suspended')",
     [Kind.BOTH_VALUES]),
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'active' "
     "OR u.status = 'suspended'", [Kind.BOTH_VALUES]),
    (both_values, "Which organizations have both active and suspended users?",
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'active' INTERSECT "
     "SELECT o.name FROM organizations o JOIN users u ON u.organization_id = o.id WHERE u.status = 'suspended'", []),
    (both_values, "Which users are active or suspended?", "SELECT email FROM users WHERE status IN ('active', 'suspended')",
     []),
    # a LIMIT nobody asked for
    (unasked_limit, "List the first names of users who logged in.", "SELECT full_name FROM users LIMIT 1",
     [Kind.UNASKED_LIMIT]),
    (unasked_limit, "Which user logged in last?", "SELECT full_name FROM users ORDER BY last_login_at DESC LIMIT 1", []),
    (unasked_limit, "Show 2 users.", "SELECT full_name FROM users LIMIT 2", []),
    (unasked_limit, "", "SELECT full_name FROM users LIMIT 1", []),
    # SUM of ids for "how many"
    (sum_of_key, "How many login attempts were there?", "SELECT sum(id) FROM login_attempts", [Kind.SUM_OF_KEY]),
    (sum_of_key, "How many successful login attempts were there?", "SELECT sum(success) FROM login_attempts", []),
    (sum_of_key, "What is the total of the ids?", "SELECT sum(id) FROM login_attempts", []),
    # the extreme value where its row is asked
    (value_not_row, "Which user logged in most recently?", "SELECT max(last_login_at) FROM users", [Kind.VALUE_NOT_ROW]),
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
]  # fmt: skip
PREVIOUS = "SELECT email FROM users WHERE organization_id = 1"
NAMED = {"fan": fan_out, "dropped": dropped_filter}


@pytest.mark.parametrize(("lint", "question", "sql", "kinds"), CASES)
def test_lints(catalog: Catalog, lint: object, question: str, sql: str, kinds: list[Kind]) -> None:
    rule = NAMED.get(lint, lint) if isinstance(lint, str) else lint
    previous = PREVIOUS if lint == "dropped" else ""
    found = list(rule(query_of(catalog, sql, question, previous)))
    assert [f.kind for f in found] == kinds, [f.message for f in found]
    assert all(f.message and not f.is_error for f in found)


def test_every_lint_kind_has_a_case() -> None:
    lint_kinds = {Kind.ALWAYS_TRUE_JOIN, Kind.FAN_OUT, Kind.UNUSED_JOIN, Kind.NEGATION_OVER_JOIN, Kind.BOTH_VALUES,
                  Kind.UNASKED_LIMIT, Kind.SUM_OF_KEY, Kind.VALUE_NOT_ROW, Kind.DROPPED_FILTER}
    assert lint_kinds <= {k for *_, kinds in CASES for k in kinds}


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
    assert "ids like 'rec\u2026'" in rendered and RECORD_IDS[0] not in rendered
    assert PEOPLE.table("person").column("id").opaque and not PEOPLE.table("person").column("name").opaque
