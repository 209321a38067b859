"""Name resolution on its own: the catalog as sqlglot's schema, names as written, and
:func:`check_names` over one table of queries with the errors, warnings and tables expected."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.query.names import did_you_mean, normalize_names, written
from text2sql_dspy.programs.query.resolution import catalog_tables, check_names
from text2sql_dspy.programs.query.validator import ValidationResult

CATALOG = Catalog(
    db_id="shop",
    tables=[
        Table(
            name="Users", columns=[Column(name="id"), Column(name="Name"), Column(name="org_id"), Column(name="email")]
        ),
        Table(name="orgs", columns=[Column(name="id"), Column(name="name"), Column(name="country")]),
        Table(name="sales.orders", columns=[Column(name="id"), Column(name="user_id"), Column(name="total")]),
    ],
)


def _cols(name: str, dialect: str = "sqlite") -> list[str]:
    return CatalogSchema(CATALOG, dialect).column_names(exp.to_table(name))


@pytest.mark.parametrize(
    ("table", "dialect", "columns"),
    [
        ("users", "sqlite", ["id", "name", "org_id", "email"]),
        ("main.users", "sqlite", ["id", "name", "org_id", "email"]),
        ("temp.users", "sqlite", ["id", "name", "org_id", "email"]),
        ("public.users", "postgres", ["id", "name", "org_id", "email"]),
        ("public.users", "sqlite", []),  # not a default schema of SQLite, nor one of the catalog's
        ("sales.orders", "postgres", ["id", "user_id", "total"]),
        ("orders", "postgres", []),  # a bare name reads the default schema only
        ("other.orgs", "postgres", []),
        ("nothing", "sqlite", []),
    ],
)
def test_catalog_schema_looks_tables_up_as_the_database_would(table: str, dialect: str, columns: list[str]) -> None:
    assert _cols(table, dialect) == columns


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT U.Emial FROM Users U", ["U", "Emial", "Users", "U"]),
        ('SELECT "Na""me", [Org Id] FROM `Users`', ['Na"me', "Org Id", "Users"]),
        ("SELECT x.a FROM t AS x", ["x", "a", "t", "x"]),
    ],
)
def test_written_gives_names_as_in_the_text(sql: str, expected: list[str]) -> None:
    tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    idents = [i for i in tree.find_all(exp.Identifier)]
    assert all(i.this == i.this.lower() for i in idents)
    assert sorted(written(i, sql) for i in idents) == sorted(expected)


@pytest.mark.parametrize(
    ("name", "candidates", "expected"),
    [
        ("emial", ["id", "email", "name"], "did you mean: email?"),
        ("user", ["users", "orgs"], "did you mean: users?"),
        ("xyz", ["users", "orgs"], ""),
        ("country_code", ["country"], "did you mean: country?"),  # one name inside the other
        ("nme", ["name", "Name2"], "did you mean: name, Name2?"),
    ],
)
def test_did_you_mean(name: str, candidates: list[str], expected: str) -> None:
    assert did_you_mean(name, candidates) == expected


def _check(sql: str, dialect: str = "sqlite") -> ValidationResult:
    scopes = traverse_scope(normalize_names(sqlglot.parse_one(sql, read=dialect)))
    schema = CatalogSchema(CATALOG, dialect)
    return ValidationResult.of(check_names(scopes, sql, schema), sql, tables=catalog_tables(scopes, schema))


@pytest.mark.parametrize(
    ("sql", "errors", "tables"),
    [
        ("SELECT name FROM users", [], ["Users"]),
        ("SELECT o.name, u.Name FROM orgs o JOIN USERS u ON u.org_id = o.id", [], ["orgs", "Users"]),
        ("SELECT nmae FROM users", ["unknown column 'nmae'"], ["Users"]),
        ("SELECT U.Emial FROM Users U", ["unknown column 'U.Emial'"], ["Users"]),
        ("SELECT name FROM user_list", ["unknown table 'user_list'"], []),
        ("SELECT id FROM users JOIN orgs ON users.org_id = orgs.id",
         ["ambiguous column 'id' (in Users, orgs): qualify it"], ["Users", "orgs"]),
        ("SELECT x.name FROM users u", ["unknown table or alias 'x' in 'x.name'"], ["Users"]),
        # derived tables and CTEs expose what their projections name, * expanded
        ("SELECT t.nm FROM (SELECT name AS nm FROM users) t", [], ["Users"]),
        ("SELECT t.name FROM (SELECT name AS nm FROM users) t", ["unknown column 't.name'"], ["Users"]),
        ("WITH c AS (SELECT * FROM orgs) SELECT country FROM c", [], ["orgs"]),
        ("WITH c AS (SELECT * FROM orgs) SELECT email FROM c", ["unknown column 'email'"], ["orgs"]),
        # an unnamed projection leaves the list open: nothing is reported
        ("SELECT t.anything FROM (SELECT count(*) FROM users) t", [], ["Users"]),
        ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT m + 1 FROM c WHERE n < 3) SELECT n FROM c",
         ["unknown column 'm'"], []),
        # correlated subqueries see the enclosing query's sources; a derived table does not
        ("SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orgs o WHERE o.id = u.org_id)", [], ["Users", "orgs"]),
        ("SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orgs WHERE email = 'x')", [], ["Users", "orgs"]),
        ("SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM orgs WHERE emial = 'x')", ["unknown column 'emial'"],
         ["Users", "orgs"]),
        ("SELECT u.name FROM users u, (SELECT u.id FROM orgs) x", ["unknown table or alias 'u' in 'u.id'"],
         ["Users", "orgs"]),
        # result aliases: visible in ORDER BY/WHERE, not in the select list
        ("SELECT name AS n FROM users WHERE n <> 'a' ORDER BY n", [], ["Users"]),
        ("SELECT name AS n, upper(n) FROM users", ["unknown column 'n'"], ["Users"]),
        ("SELECT rowid, name FROM users", [], ["Users"]),
        ("SELECT total FROM sales.orders", [], ["sales.orders"]),
        ("SELECT name FROM users UNION SELECT name FROM orgs ORDER BY nme",
         ["ORDER BY term 'nme' does not match a result column of the compound query"], ["Users", "orgs"]),
    ],
)  # fmt: skip
def test_check_names(sql: str, errors: list[str], tables: list[str]) -> None:
    found = _check(sql)
    assert found.errors == errors
    assert found.tables == tables


@pytest.mark.parametrize(
    ("sql", "warning"),
    [
        ("SELECT value FROM json_each('[1]')", "table-valued function json_each(...): its columns were not checked"),
        ("SELECT name FROM sqlite_master", "reads SQLite's system table sqlite_master: its columns were not checked"),
        ("SELECT x FROM other.t", "table 'other.t' is in another database: not checked"),
        (
            'SELECT "Nmae" FROM users',
            "\"Nmae\" is not a column, so SQLite returns the constant string 'Nmae' there (did you mean: Name?)",
        ),
    ],
)
def test_names_that_are_not_checked_are_warnings(sql: str, warning: str) -> None:
    found = _check(sql)
    assert found.errors == []
    assert found.warnings == [warning]


def test_unknown_column_lists_the_real_columns_and_their_owners() -> None:
    found = _check("SELECT country FROM users")
    assert found.errors == ["unknown column 'country'"]
    assert found.suggestions == [
        "columns of Users: id, Name, org_id, email",
        "'country' is a column of orgs: join that table to use it",
    ]


CLUB = Catalog(
    db_id="student_club",
    tables=[
        Table(name="event", columns=[Column(name="event_id", primary_key=True), Column(name="event_name")]),
        Table(name="member", columns=[Column(name="member_id", primary_key=True), Column(name="first_name"),
                                      Column(name="major")]),
        Table(name="attendance", columns=[Column(name="link_to_event", references="event.event_id"),
                                          Column(name="link_to_member", references="member.member_id")]),
        Table(name="major", columns=[Column(name="major_id", primary_key=True), Column(name="major_name")]),
    ],
)
ATTENDANCE = ("'attendance' is a table, not a column: count its rows ({}), or read one of its columns: "
              "link_to_event, link_to_member")


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        # joined along the declared key, by the name or the alias the query gives the table it joins to
        ("SELECT COUNT(attendance) FROM event WHERE event_name = 'x'",
         "unknown column 'attendance': "
         + ATTENDANCE.format("JOIN attendance ON attendance.link_to_event = event.event_id and COUNT(*)")),
        ("SELECT T1.attendance FROM event AS T1",
         "unknown column 'T1.attendance': "
         + ATTENDANCE.format("JOIN attendance ON attendance.link_to_event = T1.event_id and COUNT(*)")),
        ("SELECT T1.first_name, COUNT(T1.Attendance) FROM member T1 GROUP BY T1.member_id",
         "unknown column 'T1.Attendance': "
         + ATTENDANCE.format("JOIN attendance ON attendance.link_to_member = T1.member_id and COUNT(*)")
         .replace("'attendance' is", "'Attendance' is")),
        # already joined: count the join's rows
        ("SELECT COUNT(attendance) FROM event JOIN attendance ON attendance.link_to_event = event.event_id",
         "unknown column 'attendance': " + ATTENDANCE.format("COUNT(*)")),
        # no declared key to the query's tables: the join is left to write
        ("SELECT COUNT(major) FROM event",
         "unknown column 'major': 'major' is a table, not a column: count its rows (JOIN major ON ... and COUNT(*)), "
         "or read one of its columns: major_id, major_name"),
        # a table of the query has a column of that name: the qualifier is wrong, not the name
        ("SELECT T1.major FROM event T1 JOIN member T2 ON T1.event_id = T2.member_id", "unknown column 'T1.major'"),
        ("SELECT major FROM member", None),
        # a name that ends or begins with a table's name, at a word, where no table has such a column
        ("SELECT T1.first_name, COUNT(T1.num_attendance) FROM member T1 GROUP BY T1.member_id",
         "unknown column 'T1.num_attendance': "
         + ATTENDANCE.format("JOIN attendance ON attendance.link_to_member = T1.member_id and COUNT(*)")
         .replace("'attendance' is a table, not a column", "'attendance' is a table")),
        ("SELECT event_count FROM event",
         "unknown column 'event_count': 'event' is a table: count its rows (COUNT(*)), or read one of its columns: "
         "event_id, event_name"),
        ("SELECT major_name FROM event", "unknown column 'major_name'"),  # a column of major: join it
        ("SELECT attendances FROM event", "unknown column 'attendances'"),  # not at a word
        ("SELECT nothing FROM event", "unknown column 'nothing'"),
    ],
)  # fmt: skip
def test_an_unknown_column_that_names_a_table_says_so_and_how_to_use_it(sql: str, error: str | None) -> None:
    scopes = traverse_scope(normalize_names(sqlglot.parse_one(sql, read="sqlite")))
    findings = list(check_names(scopes, sql, CatalogSchema(CLUB, "sqlite")))
    assert [f.message for f in findings] == ([error] if error else [])
    assert all(f.kind is Kind.UNKNOWN_COLUMN for f in findings)
