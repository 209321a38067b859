"""Catalog loading from schema files, SQLite and Spider's tables.json, and schema rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from text2sql_dspy.programs.catalog.catalog import Column, Table, introspect_sqlite, load_schema_dir, load_spider_tables
from text2sql_dspy.programs.catalog.introspection import referenced_first
from text2sql_dspy.programs.errors import SchemaFileError
from text2sql_dspy.programs.source import check_agreement, open_source


def test_introspection_reads_keys_and_foreign_keys(tiny_db: Path) -> None:
    catalog = introspect_sqlite(tiny_db)
    users = catalog.table("USERS")
    assert users is not None and users.primary_key == ["id"]
    assert ("organization_id", "organizations", "id") in users.foreign_keys
    assert users.column("email").unique and not users.column("email").nullable
    assert users.column("last_login_at").nullable
    assert catalog.neighbours("users") == ["organizations", "login_attempts", "blocks"]


def test_introspection_hides_sqlites_own_tables_only(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "names.sqlite"
    with sqlite3.connect(db) as conn:  # AUTOINCREMENT makes SQLite's own sqlite_sequence
        conn.execute("CREATE TABLE sqliteish (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT)")
        conn.execute("CREATE TABLE sqlite1x (id INTEGER)")
    conn.close()
    assert [t.name for t in introspect_sqlite(db).tables] == ["sqliteish", "sqlite1x"]


def _tables(spec: str) -> list[Table]:
    """``"a>b,c b c"``: table a with keys to b and c, then tables b and c."""
    tables = []
    for entry in spec.split():
        name, _, targets = entry.partition(">")
        refs = [Column(name=f"{t}_id", type="INTEGER", references=f"{t}.id") for t in targets.split(",") if t]
        tables.append(Table(name=name, columns=[Column(name="id", type="INTEGER", primary_key=True), *refs]))
    return tables


@pytest.mark.parametrize("given, expected", [
    ("concert>stadium singer singer_in_concert>concert,singer stadium",
     "stadium concert singer singer_in_concert"),                  # MySQL's by-name order, Spider's concert_singer
    ("stadium singer concert>stadium singer_in_concert>concert,singer",
     "stadium singer concert singer_in_concert"),                  # already referenced first: unchanged
    ("a>b b>c c", "c b a"),                                        # a chain
    ("a>b b>a c", "b a c"),                                        # a cycle keeps going, nothing lost
    ("a>a b", "a b"),                                              # a self-reference
    ("a>billing.x b", "a b"),                                      # a table outside the list is no reason to move
])  # fmt: skip
def test_referenced_tables_come_before_their_referrers(given: str, expected: str) -> None:
    assert [t.name for t in referenced_first(_tables(given))] == expected.split()


def test_schema_dir_round_trips_and_agrees_with_database(tiny_db: Path, tiny_schemas: Path) -> None:
    declared = load_schema_dir(tiny_schemas, "tiny")
    actual = introspect_sqlite(tiny_db)
    assert sorted(declared.table_names) == sorted(actual.table_names)
    check_agreement(declared, actual)  # raises on disagreement
    assert declared.table("blocks").description.startswith("Times a user was blocked")


def test_render_carries_descriptions_and_samples_but_not_key_samples(tiny_db: Path, tiny_schemas: Path) -> None:
    source = open_source(tiny_db, tiny_schemas)
    text = source.catalog.render(["users"])
    assert text.startswith("CREATE TABLE users (  -- People who can sign in.")
    assert "organization_id INTEGER NOT NULL REFERENCES organizations(id)" in text
    assert "'suspended'" in text  # a stored value, so the model can match filters
    assert "values like 1, 2" not in text  # key columns carry no samples


RECS = ["rec1x5AbCdEf12", "rec9Zz81kLmN3q"]
OPAQUE = "compare only with ids the question gives"


@pytest.mark.parametrize(("column", "comment"), [
    # a column's samples are its kind of values, not filters to copy
    (Column(name="status", samples=["Open", "Planning"]), "values like 'Open', 'Planning'"),
    (Column(name="email", description="the sign-in address", samples=["ann@acme.test"]),
     "the sign-in address; values like 'ann@acme.test'"),
    (Column(name="email", description="The sign-in address.", samples=["ann@acme.test"]),
     "The sign-in address. values like 'ann@acme.test'"),
    (Column(name="n", type="INTEGER", samples=[1, 2, 3, 4]), "values like 1, 2, 3"),
    (Column(name="n", type="INTEGER", description="a count", samples=[1, 2]), "a count"),
    (Column(name="state", description="'A': active", samples=["A"]), "'A': active"),  # the description quotes them
    (Column(name="at", samples=["2024-01-02 10:00:00"]), ""),  # a timestamp teaches nothing
    # opaque ids: what they are, with no id and no start of one a model would continue
    (Column(name="id", primary_key=True, samples=RECS), f"opaque ids (14 characters); {OPAQUE}"),
    (Column(name="person_ref", samples=["rec1x5AbCdEf12", "a1b2c3d4"]), f"opaque ids (8-14 characters); {OPAQUE}"),
    (Column(name="person_ref", description="who came", samples=RECS),
     f"who came; opaque ids (14 characters); {OPAQUE}"),
])
def test_a_column_comment_shows_samples_as_examples_and_opaque_ids_by_their_kind(column: Column, comment: str) -> None:
    line = Table(name="t", columns=[column]).render().splitlines()[1]
    assert line.partition("  -- ")[2] == comment
    assert "e.g." not in line and "\u2026" not in line and "'rec" not in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("name: t\ncolumns: [\n", "cannot parse"),
        ("- just\n- a list\n", "expected a mapping"),
        ("name: t\ncolumns: []\n", "at least one column"),
        ("name: t\ncolumns:\n  - {name: a}\n  - {name: A}\n", "duplicate columns"),
        ("name: t\ncolumns:\n  - {name: a, references: nodot}\n", "table.column"),
    ],
)
def test_malformed_schema_file_names_file_and_problem(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "t.yaml").write_text(content)
    with pytest.raises(SchemaFileError, match=message) as info:
        load_schema_dir(tmp_path)
    assert "t.yaml" in str(info.value)


def test_schema_that_disagrees_with_database_is_refused(tiny_db: Path, tmp_path: Path) -> None:
    (tmp_path / "users.yaml").write_text("name: users\ncolumns:\n  - {name: id}\n  - {name: nickname}\n")
    (tmp_path / "ghosts.yaml").write_text("name: ghosts\ncolumns:\n  - {name: id}\n")
    with pytest.raises(SchemaFileError, match="users lacks column\\(s\\) nickname.*|ghosts is not"):
        open_source(tiny_db, tmp_path)


def test_spider_tables_json(tmp_path: Path) -> None:
    entry = {
        "db_id": "pets",
        "table_names_original": ["Owner", "Pet"],
        "table_names": ["owner", "pet animal"],
        "column_names_original": [[-1, "*"], [0, "OwnerId"], [0, "Name"], [1, "PetId"], [1, "OwnerId"]],
        "column_names": [[-1, "*"], [0, "owner id"], [0, "name"], [1, "pet id"], [1, "owner of pet"]],
        "column_types": ["text", "number", "text", "number", "number"],
        "primary_keys": [1, 3],
        "foreign_keys": [[4, 1]],
    }
    path = tmp_path / "tables.json"
    path.write_text(json.dumps([entry]))
    catalog = load_spider_tables(path, "pets")
    pet = catalog.table("pet")
    assert pet.description == "pet animal"
    assert pet.column("OwnerId").references == "Owner.OwnerId"
    assert pet.column("OwnerId").description == "owner of pet"
    assert catalog.table("Owner").column("Name").description == ""  # restating the name adds nothing
    with pytest.raises(SchemaFileError, match="not in"):
        load_spider_tables(path, "cars")
