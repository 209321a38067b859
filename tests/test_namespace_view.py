"""A namespace's tables (``shop__singer``) shown by their own names, and the draft renamed back before it is checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft, sqlite_file
from text2sql_dspy.programs.agents.react import ReActAgent
from text2sql_dspy.programs.catalog.catalog import Column, Table
from text2sql_dspy.programs.query.rename import namespace, renamed
from text2sql_dspy.programs.retrieval.schema_view import schema_view, without_prefix
from text2sql_dspy.programs.source import open_source

STORED = ["shop__singer", "shop__concert", "music__singer", "music__song", "concert"]


@pytest.mark.parametrize(("shown", "prefix"), [
    (["shop__singer", "shop__Song"], "shop__"),  # case kept in the names, the prefix lower-cased
    (["Shop__singer", "shop__song"], "shop__"),
    (["a__b__x", "a__b__y"], "a__b__"),  # the longest namespace
    (["shop__singer"], ""),  # one table: nothing to share
    (["shop__singer", "music__song"], ""),  # two namespaces
    (["car_makers", "car_names"], ""),  # a word, not a namespace: only "__" separates one
    (["shop__concert", "shop__singer"], ""),  # "concert" is another stored table: the bare name would be taken
    (["shop__1st", "shop__2nd"], ""),  # a bare name may not start with a digit
    (["__x", "__y"], ""),  # no namespace before the separator
    (["shop__", "shop__x"], ""),  # a bare name may not be empty
])
def test_namespace(shown: list[str], prefix: str) -> None:
    assert namespace(shown, STORED) == prefix


NAMES = {"singer": "shop__singer", "concert": "shop__concert"}


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT name FROM singer", "SELECT name FROM shop__singer"),
    # a qualifier that names the table keeps resolving: the old name becomes the alias
    ("SELECT singer.name FROM singer JOIN concert ON concert.singer_id = singer.id",
     "SELECT singer.name FROM shop__singer AS singer JOIN shop__concert AS concert ON concert.singer_id = singer.id"),
    ("SELECT T1.name FROM Singer AS T1", "SELECT T1.name FROM shop__singer AS T1"),
    # a stored name, a WITH name and a table not shown stay as written
    ("SELECT name FROM shop__singer", "SELECT name FROM shop__singer"),
    ("WITH singer AS (SELECT 1 AS x) SELECT x FROM singer", "WITH singer AS (SELECT 1 AS x) SELECT x FROM singer"),
    ("SELECT * FROM song", "SELECT * FROM song"),
    ("SELECT * FROM (SELECT name FROM singer) AS t", "SELECT * FROM (SELECT name FROM shop__singer) AS t"),
    ("SELEC name FROM", "SELEC name FROM"),  # unreadable: left for the validator to report
])
def test_renamed(sql: str, expected: str) -> None:
    assert renamed(sql, NAMES) == expected


def test_nothing_is_renamed_without_names() -> None:
    assert renamed("SELECT name FROM singer", {}) == "SELECT name FROM singer"


def test_without_prefix_renames_the_table_and_the_tables_its_keys_reference() -> None:
    table = Table(name="shop__concert", columns=[
        Column(name="id", type="INTEGER", primary_key=True),
        Column(name="singer_id", type="INTEGER", references="shop__singer.id"),
        Column(name="hall_id", type="INTEGER", references="venues__hall.id"),  # another namespace's: kept
    ])
    bare = without_prefix(table, "shop__")
    assert bare.name == "concert"
    assert [c.references for c in bare.columns] == [None, "singer.id", "venues__hall.id"]
    assert without_prefix(table, "") is table


@pytest.fixture
def namespaced_db(tmp_path: Path) -> Path:
    return sqlite_file(tmp_path / "namespaced.sqlite", """
            CREATE TABLE shop__singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE shop__concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES shop__singer(id),
                                        year INTEGER);
            CREATE TABLE music__singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE music__song (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES music__singer(id),
                                      title TEXT);
            INSERT INTO shop__singer VALUES (1, 'Ana', 'Portugal'), (2, 'Rui', 'Portugal');
            INSERT INTO shop__concert VALUES (1, 1, 2014), (2, 1, 2015);
            INSERT INTO music__singer VALUES (1, 'Bo', 'France');
        """)


QUESTION = "How many concerts did each singer from Portugal give?"


def test_a_view_of_one_namespace_shows_its_tables_by_their_own_names(namespaced_db: Path) -> None:
    source = open_source(namespaced_db, None)
    view = schema_view(source, QUESTION, retrieval_type="keyword", top_k=2, budget_tokens=10)
    assert view.tables == ["shop__singer", "shop__concert"]  # what was read is named as stored
    assert "CREATE TABLE singer (" in view.text and "CREATE TABLE concert (" in view.text
    assert "REFERENCES singer(id)" in view.text and "shop__" not in view.text
    assert view.renamed == {"singer": "shop__singer", "concert": "shop__concert"}
    sql = "SELECT singer.name, COUNT(*) FROM concert JOIN singer ON concert.singer_id = singer.id GROUP BY singer.name"
    stored = source.runnable(sql, view.renamed)
    assert "FROM shop__concert AS concert JOIN shop__singer AS singer" in stored
    assert source.validator.validate(stored).valid and source.database.execute(stored).rows == [("Ana", 2)]
    assert not schema_view(source, QUESTION, retrieval_type="keyword", budget_tokens=10_000).renamed  # shown whole


def test_a_namespace_shown_whole_reads_as_its_own_database_would(namespaced_db: Path, tmp_path: Path) -> None:
    alone = sqlite_file(tmp_path / "shop.sqlite", """
            CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES singer(id), year INTEGER);
            INSERT INTO singer VALUES (1, 'Ana', 'Portugal'), (2, 'Rui', 'Portugal');
            INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2015);
        """)
    view = schema_view(open_source(namespaced_db, None), QUESTION, retrieval_type="keyword", top_k=3, budget_tokens=10)
    assert view.namespace == "shop__"
    assert view.text == schema_view(open_source(alone, None), QUESTION, budget_tokens=10_000).text
    assert view.text.startswith("-- SQLite database 'shop'") and "music" not in view.text  # no other namespace named


def test_a_program_drafts_on_the_bare_names_and_answers_with_the_stored_ones(namespaced_db: Path) -> None:
    lm = DummyLM([draft("SELECT name FROM singer WHERE country = 'Portugal'")] * 3)
    program = ReActAgent(namespaced_db, retrieval_type="keyword", top_k=2, schema_budget=10, lm=lm)
    answer = program(question="Which singers are from Portugal?").answer
    assert answer.sql == "SELECT name FROM shop__singer WHERE country = 'Portugal'"
    assert answer.status.value == "answered"
    prompt = "\n".join(m["content"] for m in lm.history[0]["messages"])  # the schema sits in the system message
    assert "CREATE TABLE singer (" in prompt
    assert "-- singer.country: 'Portugal'" in prompt  # the stored value, by the table's name as shown
