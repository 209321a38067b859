"""The value index: built on every engine, kept fresh, looked up by the question's words; the literal check and
the requalification of a column named on the wrong table. No model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlglot

from text2sql_dspy.programs.catalog import values as values_module
from text2sql_dspy.programs.catalog.values import (
    ColumnValues,
    ValueIndex,
    _plural_and_singular,
    normalise,
    render_matches,
    schema_words,
    value_index,
)
from text2sql_dspy.programs.query.literals import literal_findings
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.programs.query.requalify import requalified
from text2sql_dspy.programs.source import open_source

CRIMES = [("Salford 001A", "Burglary", "Investigation complete; no suspect identified"),
          ("Salford 002B", "Burglary", "Under investigation"),
          ("Bolton 001A", "Vehicle crime", "Unable to prosecute suspect"),
          ("Wigan 010C", "Anti-social behaviour", "Under investigation")]
PLANTS = [("Ōi", "Japan", "Operational", "PWR"), ("Flamanville 3", "France", "Under Construction", "PWR"),
          ("Darlington", "Canada", "Operational", "PHWR"), ("Akkuyu", "Türkiye", "Planned", "PWR")]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(values_module, "_indexes", {})


def make_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE crime (id INTEGER PRIMARY KEY, LSOA TEXT, crime_type TEXT, outcome TEXT);
        CREATE TABLE plant (id INTEGER PRIMARY KEY, name TEXT, country TEXT, status TEXT, reactor_type TEXT,
                            capacity_mw INTEGER);
        CREATE TABLE unit (id INTEGER PRIMARY KEY, plant_id INTEGER REFERENCES plant(id), unit_name TEXT,
                           position TEXT);
        CREATE TABLE visit (id INTEGER PRIMARY KEY, site_id INTEGER REFERENCES plant(id), visited_on TEXT);
        CREATE TABLE label (id INTEGER PRIMARY KEY, text TEXT);
        CREATE TABLE ticket (id INTEGER PRIMARY KEY, category_id INTEGER REFERENCES label(id),
                             priority_id INTEGER REFERENCES label(id));
        CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE skill (id INTEGER PRIMARY KEY, skill_name TEXT);
        CREATE TABLE person_skill (person_id INTEGER REFERENCES person(id), skill_id INTEGER REFERENCES skill(id));
        CREATE TABLE pets (PetID INTEGER PRIMARY KEY, PetType TEXT, pet_age INTEGER);
    """)
    conn.executemany("INSERT INTO crime (LSOA, crime_type, outcome) VALUES (?, ?, ?)", CRIMES)
    conn.executemany("INSERT INTO plant (name, country, status, reactor_type, capacity_mw) VALUES (?, ?, ?, ?, 1000)",
                     PLANTS)
    conn.executemany("INSERT INTO unit (plant_id, unit_name, position) VALUES (?, ?, ?)",
                     [(1, "Unit 1", "north"), (2, "Unit 3", "south")])
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def source(tmp_path: Path):
    return open_source(make_sqlite(tmp_path / "crimes.sqlite"))


@pytest.mark.parametrize(("question", "column", "expected"), [
    ("How many crimes were recorded in Salford?", "crime.LSOA", ("Salford 001A", "Salford 002B")),
    ("crimes in salford 002b", "crime.LSOA", ("Salford 002B",)),  # case aside, the exact value first
    ("Which plants are in Turkiye?", "plant.country", ("Türkiye",)),  # accents aside
    ("Is the plant at Oi operational?", "plant.name", ("Ōi",)),
    ("How many are still under constrution?", "plant.status", ("Under Construction",)),  # a typo: fuzzy
    ("cases where the investigation is complete", "crime.outcome", ("Investigation complete; no suspect identified",)),
    ("Between Salford and Wigan, which has more burglaries?", "crime.LSOA", ("Salford 001A", "Wigan 010C")),
])
def test_a_question_finds_the_stored_values_like_its_words(source, question: str, column: str,
                                                           expected: tuple[str, ...]) -> None:
    matches = {f"{m.table}.{m.column}": m for m in value_index(source).lookup(question)}
    assert column in matches, render_matches(list(matches.values()))
    assert set(expected) <= set(matches[column].shown)
    if len(expected) == 1 and len(matches[column].shown) > 1 and normalise(expected[0]) in normalise(question):
        assert matches[column].shown[0] == expected[0]  # a value the question names exactly comes first


def test_the_lookup_renders_per_column_and_says_how_many_more(source) -> None:
    index = ValueIndex([ColumnValues("crime", "LSOA", tuple(f"Salford {i:03d}A" for i in range(163)), True)])
    [match] = index.lookup("crimes in Salford")
    assert match.render() == ("-- crime.LSOA: 'Salford 000A', 'Salford 001A', 'Salford 002A', 'Salford 003A' "
                              "(and 159 more containing 'salford')")
    assert value_index(source).lookup("How many rows are there?") == []  # no stored word: nothing to show


def test_only_the_tables_the_prompt_shows_are_looked_up(source) -> None:
    question = "Operational plants near Salford"
    assert {m.table for m in value_index(source).lookup(question)} == {"crime", "plant"}
    assert {m.table for m in value_index(source).lookup(question, tables=["PLANT"])} == {"plant"}
    assert value_index(source).lookup(question, tables=[]) == []


ROUTES = ValueIndex([ColumnValues("requests", "endpoint", ("/v1/users", "/v1/users/invite"), True),
                     ColumnValues("events", "action", ("user.blocked", "blocked"), True),
                     ColumnValues("sessions", "ip", ("92.75.31.10", "10"), True),
                     ColumnValues("events", "target", ("audit_log_export",), True)])


@pytest.mark.parametrize(("question", "names", "expected"), [
    # "Users" written as a name: a common word, matched inside a value (see tests/test_value_lookup_filters.py)
    ("how many Users", frozenset(), {"requests.endpoint": ("/v1/users", "/v1/users/invite")}),
    ("how many Users", frozenset({"users"}), {}),  # "users" names a table: not a word inside a route
    ("who was blocked", frozenset({"blocked"}), {}),  # the schema's word, not a value, even one that is the word
    ("the top 10 sessions", frozenset(), {"sessions.ip": ("10",)}),  # a number alone: only itself, not inside an IP
    ("people in the audit log", frozenset({"audit"}), {"events.target": ("audit_log_export",)}),
    ("people in the audit log", frozenset({"audit", "log"}), {}),  # every word the schema's: a phrase of the schema
])
def test_a_word_naming_the_schema_or_a_number_matches_only_itself(question: str, names: frozenset[str],
                                                                  expected: dict) -> None:
    found = {f"{m.table}.{m.column}": m.shown for m in ROUTES.lookup(question, names=names)}
    assert found == expected


HEROES = ValueIndex([ColumnValues("superhero", "full_name", ("Hunter Zolomon", "Abraham Sapien"), True),
                     ColumnValues("superhero", "superhero_name", ("Rip Hunter", "Amazo", "Abe Sapien"), True),
                     ColumnValues("race", "race", ("Amazon", "Icthyo Sapien"), True),
                     ColumnValues("publisher", "publisher_name", ("NBC - Heroes", "Marvel Comics"), True)])


@pytest.mark.parametrize(("question", "expected"), [
    # a value named exactly silences its own words elsewhere, and look-alikes of it in other columns
    ("powers of Hunter Zolomon", {"superhero.full_name": ("Hunter Zolomon",)}),
    ("eye colour of Abraham Sapien", {"superhero.full_name": ("Abraham Sapien",)}),
    ("how many powers does Amazo have", {"superhero.superhero_name": ("Amazo",)}),
    ("which heroes were born Amazons", {"race.race": ("Amazon",), "publisher.publisher_name": ("NBC - Heroes",)}),
    ("Rip Hunter's powers", {"superhero.superhero_name": ("Rip Hunter",)}),
])
def test_a_value_named_exactly_silences_its_words_and_look_alikes_elsewhere(question: str, expected: dict) -> None:
    assert {f"{m.table}.{m.column}": m.shown for m in HEROES.lookup(question)} == expected


WORLD = ValueIndex([ColumnValues("country", "continent", ("Asia", "Africa", "Europe"), True),
                    ColumnValues("country", "region", ("Eastern Asia", "Southeast Asia", "Eastern Africa"), True),
                    ColumnValues("country", "name", ("South Africa", "Japan"), True),
                    ColumnValues("colour", "colour", ("Blue", "Black/Blue", "Blue/White"), True),
                    ColumnValues("superhero", "superhero_name", ("Blue Beetle", "Blue Beetle II"), True)])


@pytest.mark.parametrize(("question", "expected"), [
    # a phrase that names a value exactly matches that value only, not the longer values that contain it
    ("Which countries are in Asia?", {"country.continent": ("Asia",)}),
    ("the smallest country in Africa", {"country.continent": ("Africa",)}),
    ("How many heroes have blue eyes?", {"colour.colour": ("Blue",)}),
    ("countries of Eastern Asia", {"country.region": ("Eastern Asia",)}),
    ("the powers of Blue Beetle", {"superhero.superhero_name": ("Blue Beetle",)}),  # not "Blue Beetle II"
])
def test_a_value_named_exactly_is_matched_alone_not_the_longer_values_containing_it(question: str,
                                                                                   expected: dict) -> None:
    assert {f"{m.table}.{m.column}": m.shown for m in WORLD.lookup(question)} == expected


def test_schema_words_are_the_names_and_the_prose_of_the_descriptions_not_the_values_they_quote(source) -> None:
    words = schema_words(source.catalog)
    assert {"crime", "crimes", "lsoa", "reactor", "type", "capacity", "mw", "unit", "units", "plant"} <= words
    assert {"country", "countries"} <= words  # a plural in 'ies' too
    assert "hero" in _plural_and_singular("heroes") and "heroes" in _plural_and_singular("hero")  # and in -es
    assert "salford" not in words
    source.catalog.table("plant").column("status").description = "Where the plant stands: 'Planned' or 'Operational'."
    words = schema_words(source.catalog)
    assert {"where", "stands"} <= words and not {"planned", "operational"} & words


def test_ids_keys_and_numbers_are_not_indexed(source) -> None:
    names = {(c.table, c.column) for c in value_index(source).columns}
    assert ("crime", "LSOA") in names and ("plant", "reactor_type") in names
    assert not {("crime", "id"), ("plant", "capacity_mw"), ("unit", "plant_id")} & names


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT COUNT(*) FROM crime WHERE LSOA = 'Salford'",
     ["'Salford' is not a value of crime.LSOA; nearest: 'Salford 001A', 'Salford 002B'"]),
    ("SELECT name FROM plant AS p WHERE p.country IN ('Japan', 'Turkey')",
     ["'Turkey' is not a value of plant.country; nearest: 'Türkiye'"]),
    ("SELECT name FROM plant WHERE status = 'Planned' AND reactor_type = 'PWR'", []),
    ("SELECT name FROM plant WHERE status LIKE 'operational'", []),  # LIKE ignores case
    ("SELECT name FROM plant WHERE status LIKE 'Plan%'", []),  # a pattern is not a value
    ("SELECT u.unit_name FROM unit AS u JOIN plant AS p ON u.plant_id = p.id WHERE status = 'operating'",
     ["'operating' is not a value of plant.status; nearest: 'Operational'"]),
    ("SELECT name FROM plant WHERE 'VA' = country", ["'VA' is not a value of plant.country"]),
])
def test_a_literal_the_column_does_not_hold_is_a_finding(source, sql: str, expected: list[str]) -> None:
    tree = normalize_names(sqlglot.parse_one(sql, read="sqlite"))
    found = literal_findings(tree, source.catalog, value_index(source))
    assert [f.split("; nearest")[0] for f in found] == [e.split("; nearest")[0] for e in expected]
    for message, wanted in zip(found, expected):
        assert message.startswith(wanted)  # the nearest stored values come first


def test_the_validator_warns_about_the_literal_and_the_query_stays_valid(source) -> None:
    result = source.validator.validate("SELECT COUNT(*) FROM crime WHERE LSOA = 'Salford'")
    assert result.valid
    assert any(w.startswith("'Salford' is not a value of crime.LSOA; nearest: 'Salford 001A'") for w in result.warnings)


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT T2.name FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id", None),  # right already
    ("SELECT T1.name FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id",
     "SELECT T2.name FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id"),
    ("SELECT plant.position FROM unit JOIN plant ON unit.plant_id = plant.id WHERE plant.position = 'north'",
     "SELECT unit.position FROM unit JOIN plant ON unit.plant_id = plant.id WHERE unit.position = 'north'"),
    ("SELECT T1.id FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id", None),  # both have it: as written
    ("SELECT T1.nowhere FROM unit AS T1", None),  # no table has it: the validator reports it
    ("SELECT s.name FROM (SELECT name FROM plant) AS s", None),
    # the column lives only in a table joined by a declared key: joined along it
    ("SELECT T1.name FROM unit AS T1 WHERE T1.unit_name = 'Unit 1'",
     "SELECT T2.name FROM unit AS T1 INNER JOIN plant AS T2 ON T1.plant_id = T2.id WHERE T1.unit_name = 'Unit 1'"),
    ("SELECT p.unit_name FROM plant AS p WHERE p.status = 'Operational'",
     "SELECT unit.unit_name FROM plant AS p INNER JOIN unit AS unit ON p.id = unit.plant_id "
     "WHERE p.status = 'Operational'"),
    # an alias the query never defines: the one table read there that has the column
    ("SELECT T2.unit_name FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id",
     "SELECT T1.unit_name FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id"),
    ("SELECT x.name FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id",
     "SELECT T3.name FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id"),
    ("SELECT x.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id", None),  # both have it: as written
    # a table's own name (or a near spelling) where the query reads it under an alias: that alias
    ("SELECT plant.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id",
     "SELECT T3.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id"),
    ("SELECT COUNT(plnt.id) FROM unit AS u JOIN plant AS p ON u.plant_id = p.id",
     "SELECT COUNT(p.id) FROM unit AS u JOIN plant AS p ON u.plant_id = p.id"),
    ("SELECT units.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id",
     "SELECT T1.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id"),
    ("SELECT site.id FROM unit AS T1 JOIN plant AS T3 ON T1.plant_id = T3.id", None),  # names neither: as written
    # a column of the enclosing query (correlated) is not moved into the subquery's table
    ("SELECT p.name FROM plant AS p WHERE EXISTS (SELECT 1 FROM unit AS u WHERE u.plant_id = p.id "
     "AND p.name = u.unit_name)", None),
    # a table called after a key's role: the table the key references, under the name written
    ("SELECT T2.name FROM unit AS T1 JOIN plant_info AS T2 ON T1.plant_id = T2.id", None),  # no plant_info_id
    ("SELECT COUNT(*) FROM unit JOIN site ON unit.site_id = site.id", None),  # unit has no site_id
    ("SELECT site.name FROM visit JOIN site ON visit.site_id = site.id",
     "SELECT site.name FROM visit JOIN plant AS site ON visit.site_id = site.id"),
    ("SELECT T2.status FROM visit AS T1 JOIN site AS T2 ON T1.site_id = T2.id",
     "SELECT T2.status FROM visit AS T1 JOIN plant AS T2 ON T1.site_id = T2.id"),
    ("SELECT site.name FROM site", None),  # no table read has the key
    # a lookup table's one column, named after the key's role
    ("SELECT T2.site FROM visit AS T1 JOIN plant AS T2 ON T1.site_id = T2.id", None),  # plant has many columns
    ("SELECT T2.category FROM ticket AS T1 JOIN label AS T2 ON T1.category_id = T2.id",
     "SELECT T2.text FROM ticket AS T1 JOIN label AS T2 ON T1.category_id = T2.id"),
    ("SELECT T2.priority FROM ticket AS T1 JOIN label AS T2 ON T1.category_id = T2.id", None),  # not that key's role
    # the column lives in a table reached through one junction table: both joined
    ("SELECT T1.name FROM person AS T1 WHERE T1.skill_name = 'Welding'",
     "SELECT T1.name FROM person AS T1 INNER JOIN person_skill AS T2 ON T1.id = T2.person_id "
     "INNER JOIN skill AS T3 ON T2.skill_id = T3.id WHERE T3.skill_name = 'Welding'"),
    # a second column of the table just joined is read from it too (this raised StopIteration)
    ("SELECT T1.name, T1.status FROM unit AS T1",
     "SELECT T2.name, T2.status FROM unit AS T1 INNER JOIN plant AS T2 ON T1.plant_id = T2.id"),
    # a column spelled with other case or underscores: the one spelling the table read there has
    ("SELECT pet_type, COUNT(*) FROM pets GROUP BY pet_type",
     'SELECT "PetType", COUNT(*) FROM pets GROUP BY "PetType"'),
    ("SELECT reactorType FROM plant WHERE capacityMW > 10",
     "SELECT reactor_type FROM plant WHERE capacity_mw > 10"),
    ("SELECT T1.reactorType FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id",
     "SELECT T2.reactor_type FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id"),
    ("SELECT T2.petage FROM unit AS T1 JOIN pets AS T2 ON T1.id = T2.PetID",
     "SELECT T2.pet_age FROM unit AS T1 JOIN pets AS T2 ON T1.id = T2.PetID"),
    ("SELECT status AS reactortype FROM plant ORDER BY reactortype", None),  # the select's own name
    ("SELECT COUNT(*) AS reactortype FROM plant HAVING reactortype > 1", None),
    ("SELECT skillname FROM person_skill", None),  # spelled so only on a table not read
    ("SELECT T1.unitname FROM unit AS T1 JOIN unit AS T2 ON T1.id = T2.id", "SELECT T1.unit_name FROM unit AS T1 "
     "JOIN unit AS T2 ON T1.id = T2.id"),  # the same table twice: the qualifier written decides
    ("SELECT unitname FROM unit AS T1 JOIN unit AS T2 ON T1.id = T2.id", None),  # two readings
    # a column two tables have, joined on it by equality: either reading gives the same value
    ("SELECT id FROM unit AS T1 JOIN plant AS T2 ON T1.id = T2.id",
     "SELECT T1.id FROM unit AS T1 JOIN plant AS T2 ON T1.id = T2.id"),
    ("SELECT id FROM unit AS T1 JOIN plant AS T2 ON T1.plant_id = T2.id", None),  # joined on another column
])
def test_a_column_on_the_wrong_table_moves_to_the_one_that_has_it(source, sql: str, expected: str | None) -> None:
    assert requalified(sql, source.catalog) == (expected or sql)


def test_changed_data_gets_a_fresh_index_before_the_next_question(source, tmp_path: Path) -> None:
    assert value_index(source).lookup("crimes in Eccles") == []
    conn = sqlite3.connect(tmp_path / "crimes.sqlite")
    conn.execute("INSERT INTO crime (LSOA, crime_type, outcome) VALUES ('Eccles 004D', 'Arson', 'Under investigation')")
    conn.commit()
    conn.close()
    [match] = value_index(source).lookup("crimes in Eccles")
    assert match.shown == ("Eccles 004D",)
    assert not any("Eccles" in w for w in source.validator.validate(
        "SELECT * FROM crime WHERE LSOA = 'Eccles 004D'").warnings)


def test_the_index_is_kept_on_disk_and_read_back_while_the_data_is_unchanged(source, monkeypatch) -> None:
    first = value_index(source)
    files = list((Path(values_module.default_cache_dir()) / "values").glob("*.json"))
    assert len(files) == 1
    monkeypatch.setattr(values_module, "_indexes", {})
    monkeypatch.setattr(values_module, "build_value_index", lambda *a, **k: pytest.fail("rebuilt unchanged data"))
    again = value_index(source)
    assert again is not first and again.columns == first.columns


def test_duckdb_builds_the_same_index(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "plants.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE plant (id INTEGER PRIMARY KEY, name VARCHAR, status VARCHAR)")
    conn.executemany("INSERT INTO plant VALUES (?, ?, ?)", [(i, n, s) for i, (n, _, s, _) in enumerate(PLANTS)])
    conn.close()
    source = open_source(f"duckdb:///{path}")
    [match] = [m for m in value_index(source).lookup("plants under construction") if m.column == "status"]
    assert match.shown == ("Under Construction",)


def test_postgres_builds_the_index_through_the_read_only_role(postgres) -> None:
    postgres.create_database("plants_values")
    postgres.psql("plants_values", "CREATE TABLE plant (id serial PRIMARY KEY, name text, status text); "
                                   "INSERT INTO plant (name, status) VALUES ('Akkuyu', 'Planned'), ('Ōi', "
                  "'Operational')")
    postgres.grant_reader("plants_values")
    source = open_source(postgres.reader_url("plants_values"))
    index = value_index(source)
    assert index.knows("plant", "status") and index.holds("plant", "status", "Planned")
    assert index.fingerprint.startswith("postgres:")


@pytest.mark.parametrize(("text", "expected"), [
    ("Türkiye", "turkiye"), ("  Salford   001A ", "salford 001a"), ("3-D Man", "3 d man"), ("ŌI", "oi"),
])
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_the_drafting_facts_take_no_word_the_schema_uses(source) -> None:
    from text2sql_dspy.programs.agents.base import question_facts

    assert "'Salford 001A', 'Salford 002B'" in question_facts(source, "How many crimes were recorded in Salford?")
    assert question_facts(source, "How many crime rows are there?") == ""  # "crime" names the table
