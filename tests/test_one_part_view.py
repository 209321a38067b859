"""A wide schema of several linked parts is shown by its top hit's part; the other parts' tables are only named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import sqlite_file
from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.retrieval.retriever import RetrievedTable
from text2sql_dspy.programs.retrieval.schema_view import one_part, schema_view, whole_part
from text2sql_dspy.programs.source import open_source


def key() -> Column:
    return Column(name="id", type="INTEGER", primary_key=True)


def ref(name: str, target: str) -> Column:
    return Column(name=name, type="INTEGER", references=f"{target}.id")


# Two parts that declared keys link (a_*, b_*) and one table that no key links (c_log).
CATALOG = Catalog(db_id="wide", tables=[
    Table(name="a_users", columns=[key()]),
    Table(name="a_orders", columns=[key(), ref("user_id", "a_users")]),
    Table(name="a_items", columns=[key(), ref("order_id", "a_orders")]),
    Table(name="b_users", columns=[key()]),
    Table(name="b_posts", columns=[key(), ref("user_id", "b_users")]),
    Table(name="c_log", columns=[key()]),
])


def test_parts_group_the_tables_that_declared_keys_link_and_leave_out_those_none_links() -> None:
    parts = CATALOG.parts()
    assert set(parts) == {"a_users", "a_orders", "a_items", "b_users", "b_posts"}
    assert parts["a_users"] == parts["a_orders"] == parts["a_items"] != parts["b_users"] == parts["b_posts"]


@pytest.mark.parametrize(("hits", "budget", "rendered", "named"), [
    # one part among the hits: all rendered, as before
    (["a_users", "a_orders"], 10_000, {"a_users", "a_orders"}, []),
    # two parts: the top hit's part whole (it fits), the other part's hit named
    (["a_users", "b_users"], 10_000, {"a_users", "a_orders", "a_items"}, ["b_users"]),
    # the part does not fit the budget: its hits only
    (["a_users", "b_users"], 1, {"a_users"}, ["b_users"]),
    # a table no key links is rendered beside the top hit's part
    (["a_orders", "c_log", "b_posts"], 1, {"a_orders", "c_log"}, ["b_posts"]),
    # a top hit that no key links: every hit rendered
    (["c_log", "a_users", "b_users"], 10_000, {"c_log", "a_users", "b_users"}, []),
    ([], 10_000, set(), []),
])
def test_one_part(hits: list[str], budget: int, rendered: set[str], named: list[str]) -> None:
    found = one_part(CATALOG, [RetrievedTable(h, 1.0 - i / 10) for i, h in enumerate(hits)], budget)
    assert found == (rendered, named)


@pytest.mark.parametrize(("rendered", "whole"), [
    ({"a_users", "a_orders", "a_items"}, True),  # one part, every table of it
    ({"a_users", "a_orders"}, False),  # a_items left out
    ({"a_users", "a_orders", "a_items", "c_log"}, True),  # a table no key links is in no part
    ({"a_users", "a_orders", "a_items", "b_users"}, False),  # b_posts left out
    ({"c_log"}, True),
])
def test_whole_part(rendered: set[str], whole: bool) -> None:
    assert whole_part(CATALOG, rendered) is whole


@pytest.fixture
def wide_db(tmp_path: Path) -> Path:
    return sqlite_file(tmp_path / "wide.sqlite", """
            CREATE TABLE shop_singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
            CREATE TABLE shop_concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES shop_singer(id),
                                       year INTEGER);
            CREATE TABLE music_singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
            CREATE TABLE music_song (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES music_singer(id), title TEXT);
            INSERT INTO shop_singer VALUES (1, 'Ana', 30);
            INSERT INTO music_singer VALUES (1, 'Bo', 'France');
        """)


def test_a_schema_over_the_budget_renders_the_top_hits_part_and_names_the_rest(wide_db: Path) -> None:
    source = open_source(wide_db, None)
    question = "How many concerts did each singer give, by year?"
    kept = schema_view(source, question, retrieval_type="keyword", top_k=3, budget_tokens=10)
    every = schema_view(source, question, retrieval_type="keyword", top_k=3, budget_tokens=10, keep_to_one_part=False)
    assert kept.tables == ["shop_singer", "shop_concert"]
    assert "CREATE TABLE music_singer" not in kept.text
    assert kept.text.rstrip().endswith("not linked to the tables above by any key: music_singer")
    assert "CREATE TABLE music_singer" in every.text and "not linked" not in every.text
