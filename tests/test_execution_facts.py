"""ExecutionFacts: what a query returned, as the judge and the redraft read it."""

from __future__ import annotations

from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.results import MAX_CELL_CHARS, facts_of


def test_a_plain_result_shows_columns_count_and_first_rows() -> None:
    facts = facts_of(QueryResult(columns=["name", "n"], rows=[("Ann", 2), ("Bob", 1)]))
    assert facts.ok and facts.flags == []
    assert facts.render() == "columns: name, n\n2 rows\n| Ann | 2 |\n| Bob | 1 |"
    assert facts_of(QueryResult(columns=["n"], rows=[(1,)])).render() == "columns: n\n1 row\n| 1 |"


def test_an_empty_result_is_flagged() -> None:
    facts = facts_of(QueryResult(columns=["email"], rows=[]))
    assert facts.empty and not facts.all_null and not facts.single_repeated_value
    assert facts.render() == "columns: email\n0 rows\nwarning: EMPTY RESULT: no rows"


def test_all_null_values_are_flagged() -> None:
    one = facts_of(QueryResult(columns=["a", "b"], rows=[(None, None)]))
    assert one.all_null and not one.single_repeated_value and not one.empty
    assert one.render() == "columns: a, b\n1 row\nwarning: ALL VALUES ARE NULL\n| NULL | NULL |"
    many = facts_of(QueryResult(columns=["a"], rows=[(None,), (None,)]))
    assert many.flags == ["ALL VALUES ARE NULL", "every row holds the same value"]


def test_a_single_repeated_value_is_flagged() -> None:
    facts = facts_of(QueryResult(columns=["plan"], rows=[("Business",)] * 3))
    assert facts.single_repeated_value and facts.flags == ["every row holds the same value"]
    assert "warning: every row holds the same value" in facts.render()
    unhashable = facts_of(QueryResult(columns=["doc"], rows=[({"a": [1]},), ({"a": [1]},)]))  # e.g. PostgreSQL JSON
    assert unhashable.single_repeated_value


def test_flags_look_at_every_row_not_only_the_shown_ones() -> None:
    rows = [(None,)] * 5 + [(7,)]
    facts = facts_of(QueryResult(columns=["x"], rows=rows), max_rows=5)
    assert not facts.all_null and not facts.single_repeated_value
    assert facts.render().endswith("| NULL |\n... 1 more rows")


def test_an_error_is_shown_as_the_error() -> None:
    facts = facts_of(QueryResult(error="no such column: state"))
    assert not facts.ok and not facts.empty and facts.flags == []
    assert facts.render() == "ERROR: no such column: state"


def test_a_truncated_result_and_a_long_cell() -> None:
    long = "x" * 100
    facts = facts_of(QueryResult(columns=["t"], rows=[(long,), ("y",)], truncated=True))
    text = facts.render()
    assert "2+ rows" in text
    assert f"| {'x' * (MAX_CELL_CHARS - 1)}… |" in text
