"""The validator's rules one by one, table-driven: each row a query and the findings (kind, message) expected of
one rule, a clean query among them; then the steps around the rules (limits, parse, policy, dry run) through
:class:`SQLValidator`, and every :class:`Kind` covered at least once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import sqlglot

from text2sql_dspy.programs.catalog.catalog import Catalog, introspect_sqlite
from text2sql_dspy.programs.catalog.values import ValueIndex, build_value_index
from text2sql_dspy.programs.db.database import SQLiteDatabase
from text2sql_dspy.programs.db.policy import READ_ONLY_HINT
from text2sql_dspy.programs.query import validator as rules
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct
from text2sql_dspy.programs.query.lints import cartesian_join, limit_without_order, select_star
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.validator import (
    MAX_NESTING,
    MAX_QUERY_CHARS,
    RULES,
    Query,
    SQLValidator,
    ValidationResult,
    apply,
    missing_values,
    names,
    shows_key,
)

COVERED: set[Kind] = set()  # the kinds the tables below expect, checked last against Kind


def expect(*found: tuple[Kind, str]) -> list[tuple[Kind, str]]:
    COVERED.update(kind for kind, _ in found)
    return list(found)


@pytest.fixture(scope="module")
def catalog(tiny_db: Path) -> Catalog:
    return introspect_sqlite(tiny_db)


@pytest.fixture(scope="module")
def index(tiny_db: Path, catalog: Catalog) -> ValueIndex:
    return build_value_index(SQLiteDatabase(tiny_db), catalog, progress=False)


def query_of(catalog: Catalog, sql: str, *, question: str = "", index: ValueIndex | None = None) -> Query:
    tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    values = (lambda: index) if index is not None else None
    return Query(tree, sql, catalog, CatalogSchema(catalog), "sqlite", values, question)


def said(findings: Iterable[Finding]) -> list[tuple[Kind, str]]:
    return [(f.kind, f.message) for f in findings]


def matches(findings: Iterable[Finding], expected: list[tuple[Kind, str]]) -> bool:
    """The findings are the expected ones, in order, each message starting with the expected text."""
    found = said(findings)
    return len(found) == len(expected) and all(
        kind == want and message.startswith(text) for (kind, message), (want, text) in zip(found, expected)
    )


# --- the rules, in order ------------------------------------------------------------------------------------------


def test_rules_run_in_todays_order() -> None:
    assert [rule.__name__ for rule in RULES] == [
        "names", "ungrouped_aggregate", "select_star", "limit_without_order", "cartesian_join", "always_true_join",
        "fan_out", "unused_join",
        "negation_over_join", "off_key_join", "counted_join_key", "both_values", "unasked_limit", "sum_of_key",
        "sum_for_count", "value_not_row", "opaque_id", "dropped_filter", "unasked_filter", "name_as_key",
        "month_name_date", "unlinked_join", "outer_column", "missing_values", "shows_key",
    ]  # fmt: skip
    assert rules.WHILE_VALID == {missing_values, shows_key} and rules.AFTER_DRY_RUN == {shows_key}


NAMES = [
    ("SELECT full_name FROM users", expect()),
    ("SELECT full_name FROM usr", expect((Kind.UNKNOWN_TABLE, "unknown table 'usr'"))),
    ("SELECT u.emial FROM users u", expect((Kind.UNKNOWN_COLUMN, "unknown column 'u.emial'"))),
    ("SELECT x.email FROM users u", expect((Kind.UNKNOWN_ALIAS, "unknown table or alias 'x' in 'x.email'"))),
    ("SELECT id FROM users JOIN blocks ON users.id = blocks.user_id",
     expect((Kind.AMBIGUOUS_COLUMN, "ambiguous column 'id' (in users, blocks): qualify it"))),
    ("SELECT name FROM organizations UNION SELECT full_name FROM users ORDER BY nme",
     expect((Kind.COMPOUND_ORDER_BY, "ORDER BY term 'nme' does not match a result column of the compound query"))),
    ('SELECT "Emial" FROM users',
     expect((Kind.QUOTED_NAME, "\"Emial\" is not a column, so SQLite returns the constant string 'Emial' there "
                               "(did you mean: email?)"))),
    ("SELECT value FROM json_each('[1]')",
     expect((Kind.UNCHECKED, "table-valued function json_each(...): its columns were not checked"))),
    ("SELECT x FROM other.t", expect((Kind.UNCHECKED, "table 'other.t' is in another database: not checked"))),
    # tables first, then columns, each query level in turn; every unknown name once
    ("SELECT a.nme, b.nme FROM users a JOIN usr b ON a.id = b.id JOIN usr c ON a.id = c.id",
     expect((Kind.UNKNOWN_TABLE, "unknown table 'usr'"), (Kind.UNKNOWN_COLUMN, "unknown column 'a.nme'"))),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "expected"), NAMES)
def test_names(catalog: Catalog, sql: str, expected: list[tuple[Kind, str]]) -> None:
    assert said(distinct(names(query_of(catalog, sql)))) == expected


def test_a_name_finding_says_where_and_what_to_write(catalog: Catalog) -> None:
    [finding] = names(query_of(catalog, "SELECT U.Emial FROM Users U"))
    assert finding.is_error and finding.where == "U.Emial"
    assert finding.suggestions[-1] == "columns of users: id, organization_id, email, full_name, status, last_login_at"


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (RecursionError(), "query too deeply nested to check table and column names"),
        (ValueError("no\n  scope"), "could not check table and column names (no scope)"),
    ],
)
def test_a_failing_name_check_keeps_what_it_found_and_warns(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, failure: Exception, expected: str
) -> None:
    def check_names(*_: object) -> Iterator[Finding]:
        yield Finding(kind=Kind.UNKNOWN_TABLE, message="unknown table 'usr'")
        raise failure

    monkeypatch.setattr(rules, "check_names", check_names)
    found = list(names(query_of(catalog, "SELECT 1 FROM usr")))
    assert said(found) == [(Kind.UNKNOWN_TABLE, "unknown table 'usr'"), (Kind.UNCHECKED, expected)]


STAR = "selects *: list only the columns the question asks for"
LIMIT = "LIMIT without ORDER BY: which rows come back is arbitrary"


def cartesian(names: str, verb: str = "is", it: str = "it") -> str:
    return (f"cartesian join: {names} {verb} joined without ON/USING and no WHERE condition links {it} "
            "(every row pairs with every row): add a join condition")  # fmt: skip


LINTS = [
    (select_star, "SELECT * FROM users", expect((Kind.SELECT_STAR, STAR))),
    (select_star, "SELECT u.* FROM users u", expect((Kind.SELECT_STAR, STAR))),
    (select_star, "SELECT id FROM users UNION SELECT * FROM blocks", expect((Kind.SELECT_STAR, STAR))),
    (select_star, "SELECT count(*) FROM users WHERE EXISTS (SELECT * FROM blocks)", expect()),
    (select_star, "SELECT email FROM (SELECT * FROM users) AS t", expect()),
    (limit_without_order, "SELECT email FROM users LIMIT 1", expect((Kind.LIMIT_WITHOUT_ORDER, LIMIT))),
    (limit_without_order, "SELECT email FROM users ORDER BY id LIMIT 1", expect()),
    (limit_without_order, "SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT 1", expect()),
    (cartesian_join, "SELECT u.email FROM users u, blocks b", expect((Kind.CARTESIAN_JOIN, cartesian("'b'")))),
    (cartesian_join, "SELECT u.email FROM users u CROSS JOIN blocks b, organizations o",
     expect((Kind.CARTESIAN_JOIN, cartesian("'b', 'o'", "are", "them")))),
    (cartesian_join, "SELECT u.email FROM users u, blocks b WHERE b.user_id = u.id", expect()),
    (cartesian_join, "SELECT u.email FROM users u JOIN blocks b ON b.user_id = u.id", expect()),
    (cartesian_join, "SELECT u.email FROM users u, (SELECT count(*) AS n FROM blocks) c", expect()),
    (cartesian_join, "SELECT email FROM users", expect()),
]  # fmt: skip


@pytest.mark.parametrize(("lint", "sql", "expected"), LINTS)
def test_lints(catalog: Catalog, lint: rules.Rule, sql: str, expected: list[tuple[Kind, str]]) -> None:
    found = list(lint(query_of(catalog, sql)))
    assert said(found) == expected
    assert not any(f.is_error for f in found)


def test_a_failing_lint_says_nothing(catalog: Catalog) -> None:
    query = query_of(catalog, "SELECT * FROM users")
    broken = Query(None, query.sql, query.catalog, query.schema)  # type: ignore[arg-type]
    assert [list(rule(broken)) for rule in RULES[1:4]] == [[], [], []]


MISSING = [
    ("SELECT email FROM users WHERE status = 'actve'",
     expect((Kind.MISSING_VALUE, "'actve' is not a value of users.status; nearest: 'active'"))),
    ("SELECT u.email FROM users u WHERE u.status IN ('active', 'gone')",
     expect((Kind.MISSING_VALUE, "'gone' is not a value of users.status"))),
    ("SELECT email FROM users WHERE status = 'active'", expect()),
    ("SELECT email FROM users WHERE status LIKE 'ACTIVE'", expect()),  # LIKE ignores case
    ("SELECT email FROM users WHERE status LIKE 'act%'", expect()),  # a pattern is not a value
]  # fmt: skip


@pytest.mark.parametrize(("sql", "expected"), MISSING)
def test_missing_values(catalog: Catalog, index: ValueIndex, sql: str, expected: list[tuple[Kind, str]]) -> None:
    found = missing_values(query_of(catalog, sql, index=index))
    assert matches(found, expected), said(found)


def test_missing_values_needs_the_index(catalog: Catalog) -> None:
    assert missing_values(query_of(catalog, "SELECT email FROM users WHERE status = 'actve'")) == []


KEY = ("the answer shows the key users.organization_id, a number pointing into organizations: "
       "show the organizations columns that name it")  # fmt: skip

KEYS = [
    ("SELECT organization_id FROM users WHERE full_name = 'Ann Lee'", "Which organization is Ann Lee in?",
     expect((Kind.SHOWS_KEY, KEY))),
    ("SELECT u.organization_id FROM users u", "Where do users work?", expect((Kind.SHOWS_KEY, KEY))),
    ("SELECT organization_id FROM users WHERE full_name = 'Ann Lee'", "What is the organization id of Ann Lee?",
     expect()),  # asked for
    ("SELECT organization_id FROM users WHERE full_name = 'Ann Lee'", "", expect()),  # no question
    ("SELECT u.organization_id, o.name FROM users u JOIN organizations o ON u.organization_id = o.id",
     "Organizations of users", expect()),
    ("SELECT id FROM users", "List the users", expect()),  # a primary key, not a foreign one
]  # fmt: skip


@pytest.mark.parametrize(("sql", "question", "expected"), KEYS)
def test_shows_key(catalog: Catalog, sql: str, question: str, expected: list[tuple[Kind, str]]) -> None:
    assert said(shows_key(query_of(catalog, sql, question=question))) == expected


def test_the_rules_after_an_error_are_skipped(catalog: Catalog, index: ValueIndex) -> None:
    question = "Which organization is Ann in?"
    sql = "SELECT organization_id FROM users WHERE status = 'gone' AND nme = 'Ann'"
    kinds = [f.kind for f in apply(query_of(catalog, sql, question=question, index=index))]
    assert kinds == [Kind.UNKNOWN_COLUMN, Kind.UNASKED_FILTER]  # the lints still speak; the literal check does not
    sql = "SELECT organization_id FROM users WHERE status = 'gone' LIMIT 1"
    kinds = [f.kind for f in apply(query_of(catalog, sql, question=question, index=index))]
    assert kinds == [Kind.LIMIT_WITHOUT_ORDER, Kind.UNASKED_LIMIT, Kind.UNASKED_FILTER, Kind.MISSING_VALUE,
                     Kind.SHOWS_KEY]


# --- findings and results ---------------------------------------------------------------------------------------


def test_errors_are_told_from_warnings_by_kind() -> None:
    assert Finding(kind=Kind.UNKNOWN_COLUMN, message="x").is_error
    assert not Finding(kind=Kind.MISSING_VALUE, message="x").is_error
    assert Finding(kind=Kind.SYNTAX, message="x", suggestions=("", "a", "")).suggestions == ("a",)


def test_repeats_are_dropped_unless_they_bring_a_new_hint() -> None:
    a1 = Finding(kind=Kind.UNKNOWN_COLUMN, message="a", suggestions=("h1",))
    b = Finding(kind=Kind.UNKNOWN_COLUMN, message="b", suggestions=("h2",))
    a2 = Finding(kind=Kind.UNKNOWN_COLUMN, message="a", suggestions=("h3",))
    again = Finding(kind=Kind.UNKNOWN_COLUMN, message="a", where="elsewhere", suggestions=("h1",))
    assert distinct([a1, b, again, a2, a1]) == [a1, b, a2]
    result = ValidationResult.of([a1, b, a2], "SELECT 1")
    assert not result.valid and result.warnings == []
    assert (result.errors, result.suggestions) == (["a", "b"], ["h1", "h2", "h3"])


# --- the steps around the rules, through the validator ------------------------------------------------------------


@pytest.fixture(scope="module")
def validator(tiny_db: Path, catalog: Catalog) -> SQLValidator:
    return SQLValidator(catalog, SQLiteDatabase(tiny_db))


EMPTY = "query returns no rows — check filter values against the stored values"

STEPS = [
    (None, expect((Kind.NOT_TEXT, "expected the SQL query as text, got NoneType"))),
    (b"SELECT 1 \xff", expect((Kind.NOT_TEXT, "query is not valid UTF-8 text"))),
    ("SELECT email FROM users\x00", expect((Kind.NOT_TEXT, "query contains a NUL character"))),
    ("x" * (MAX_QUERY_CHARS + 1),
     expect((Kind.TOO_BIG, f"query too long ({MAX_QUERY_CHARS + 1:,} characters; the limit is {MAX_QUERY_CHARS:,})"))),
    ("SELECT " + "(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1),
     expect((Kind.TOO_BIG, f"query too deeply nested ({MAX_NESTING + 1} levels of parentheses/CASE; "
                           f"the limit is {MAX_NESTING})"))),
    ("", expect((Kind.EMPTY_QUERY, "empty query: write one SELECT statement"))),
    ("-- a comment", expect((Kind.EMPTY_QUERY, "empty query: only comments, no statement"))),
    ("SELECT email FROM users WHERE", expect((Kind.SYNTAX, "syntax error: "))),
    ("SELECT email FROM users WHERE email = 'a", expect((Kind.SYNTAX, "syntax error: cannot read the query near"))),
    ("DROP TABLE users",
     expect((Kind.REFUSED, "dangerous operation: DROP (only a single read-only SELECT is allowed)"))),
    ("SELECT 1; SELECT 2",
     expect((Kind.MULTIPLE_STATEMENTS,
             "dangerous operation: multiple statements (SELECT, SELECT); send exactly one SELECT"))),
    ("VALUES (1, 2)", expect((Kind.NOT_A_QUERY, "not a query: expected one SELECT statement, got VALUES"))),
    ("SELECT email FROM users WHERE count(*) > 1",
     expect((Kind.UNGROUPED_AGGREGATE, "COUNT(*) in WHERE: an aggregate is never allowed there"))),
    ("SELECT email FROM users WHERE id = likelihood(1, 2)",
     expect((Kind.DATABASE_ERROR,
             "database error: second argument to likelihood() must be a constant between 0.0 and 1.0"))),
    ("SELECT email FROM users WHERE status = 'gone'", expect((Kind.EMPTY_RESULT, EMPTY))),
    ("SELECT email FROM users ORDER BY id", expect()),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), STEPS)
def test_the_steps_around_the_rules(validator: SQLValidator, text: object, expected: list[tuple[Kind, str]]) -> None:
    result = validator.validate(text)  # type: ignore[arg-type]
    assert matches(result.findings, expected), said(result.findings)
    assert result.valid == (not any(kind.is_error for kind, _ in expected))
    assert result.dangerous == any(kind in (Kind.REFUSED, Kind.MULTIPLE_STATEMENTS) for kind, _ in expected)
    if result.dangerous:
        assert result.suggestions == [READ_ONLY_HINT]


SLOW = expect((Kind.SLOW, "dry run timed out after 0.05s: the query may be too slow (cartesian join? missing join "
                          "condition?)"))  # fmt: skip


def test_a_slow_dry_run_is_a_warning(tiny_db: Path, catalog: Catalog) -> None:
    slow = SQLValidator(catalog, SQLiteDatabase(tiny_db), dry_run_timeout_s=0.05)
    sql = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100000000) SELECT count(*) FROM c"
    result = slow.validate(sql)
    assert said(result.findings) == SLOW and result.valid


NOT_ANALYSED = expect((Kind.NOT_ANALYSED, "could not analyse the query (RuntimeError)"))


def test_a_value_index_that_fails_is_not_contained_by_the_rule(catalog: Catalog) -> None:
    def broken() -> ValueIndex:
        raise RuntimeError("index unreadable")

    result = SQLValidator(catalog, values=broken).validate("SELECT email FROM users")
    assert said(result.findings) == NOT_ANALYSED and not result.valid


def test_a_key_shown_follows_the_dry_run_and_only_on_a_valid_query(validator: SQLValidator) -> None:
    question = "Which organization is Nobody in?"
    result = validator.validate("SELECT organization_id FROM users WHERE full_name = 'Nobody'", question)
    assert said(result.findings) == [(Kind.EMPTY_RESULT, EMPTY), (Kind.SHOWS_KEY, KEY)]
    assert result.valid and result.warnings == [EMPTY, KEY]
    result = validator.validate("SELECT organization_id FROM users WHERE id = likelihood(1, 2)",
                                question)
    assert [f.kind for f in result.findings] == [Kind.DATABASE_ERROR]
    assert validator.validate("SELECT organization_id FROM users WHERE full_name = 'Nobody'").warnings == [EMPTY]


def test_a_result_lists_its_errors_first(validator: SQLValidator) -> None:
    result = validator.validate("SELECT * FROM users WHERE id = likelihood(1, 2)")
    assert [f.kind for f in result.findings] == [Kind.DATABASE_ERROR, Kind.SELECT_STAR]
    assert [f.message for f in result.findings] == [*result.errors, *result.warnings]


def test_every_kind_is_covered() -> None:
    from tests.test_lints import CASES, UNLINKED

    in_lints = {k for *_, kinds in [*CASES, *UNLINKED] for k in kinds}  # tests/test_lints.py
    # REGROUPED: tests/test_verifier.py; REPAIRED: tests/test_repairs.py
    assert COVERED | in_lints | {Kind.OPAQUE_ID, Kind.REGROUPED, Kind.REPAIRED} == set(Kind)
