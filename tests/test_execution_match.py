"""Execution comparison: the strict match that grades (column order ignored, as in Spider's test-suite
evaluation), and the relaxed one reported beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.results import columns_subset_match, results_match

GOLD = ("SELECT u.email, count(*) AS n FROM login_attempts a JOIN users u ON u.id = a.user_id WHERE a.success = 0 "
        "GROUP BY u.email")


def result(*rows: tuple) -> QueryResult:
    return QueryResult(columns=[f"c{i}" for i in range(len(rows[0]) if rows else 0)], rows=list(rows))


@pytest.mark.parametrize(
    ("pred", "strict", "relaxed", "note"),
    [
        (GOLD, True, True, "the expected rows"),
        ("SELECT u.email FROM users u WHERE u.id IN (SELECT user_id FROM login_attempts WHERE success = 0)",
         False, True, "other columns"),  # drops the counts
        ("SELECT u.id, u.email, count(*) FROM login_attempts a JOIN users u ON u.id = a.user_id "
         "WHERE a.success = 0 GROUP BY u.id", False, True, "other columns"),  # adds an id
        ("SELECT count(*), u.email FROM login_attempts a JOIN users u ON u.id = a.user_id "
         "WHERE a.success = 0 GROUP BY u.email", True, True, "the expected rows"),  # columns swapped
        ("SELECT email FROM users", False, False, "3 rows"),  # a row too many
        ("SELECT email FROM users WHERE status = 'active'", False, False, "2 rows"),  # wrong people
        ("SELECT nope FROM users", False, False, "failed to execute"),
    ],
)
def test_strict_and_relaxed_matches_on_a_database(tiny_db: Path, pred: str, strict: bool, relaxed: bool,
                                                  note: str) -> None:
    comparison = compare_execution(pred, GOLD, str(tiny_db))
    assert (comparison.match, comparison.relaxed_match) == (strict, relaxed)
    assert note in comparison.describe()


def test_order_counts_only_when_gold_orders() -> None:
    ascending, descending = result((1,), (2,)), result((2,), (1,))
    assert results_match(descending, ascending, ordered=False)
    assert not results_match(descending, ascending, ordered=True)
    assert not columns_subset_match(result((2, "b"), (1, "a")), ascending, ordered=True)
    assert columns_subset_match(result((1, "a"), (2, "b")), ascending, ordered=True)


def test_relaxed_match_pairs_each_column_with_a_distinct_one() -> None:
    gold = result(("a", 1), ("b", 1))
    assert not columns_subset_match(result((1, 1), (1, 1)), gold, ordered=False)  # one gold column used twice
    assert columns_subset_match(result(("a",), ("b",)), gold, ordered=False)
    # rows must stay rows: each column's values right, but paired differently
    assert not columns_subset_match(result(("a", 2), ("b", 1)), result(("a", 1, 0), ("b", 2, 0)), ordered=False)
    assert not columns_subset_match(result(), gold, ordered=False)


def test_float_noise_is_not_a_difference() -> None:
    assert results_match(result((0.1 + 0.2,)), result((0.3,)), ordered=False)
    assert results_match(result((2.0,)), result((2,)), ordered=False)


def test_strict_match_ignores_column_order_but_not_rows_or_width() -> None:
    gold = result(("active", 3), ("blocked", 1))
    assert results_match(result((3, "active"), (1, "blocked")), gold, ordered=False)
    assert results_match(result((1, "blocked"), (3, "active")), gold, ordered=False)
    assert not results_match(result((1, "active"), (3, "blocked")), gold, ordered=False)  # values paired differently
    assert not results_match(result(("active",), ("blocked",)), gold, ordered=False)  # a column short
    assert not results_match(result(("active", 3, 3), ("blocked", 1, 1)), gold, ordered=False)  # a column more
    assert results_match(result((3, "active"), (1, "blocked")), gold, ordered=True)
    assert not results_match(result((1, "blocked"), (3, "active")), gold, ordered=True)  # rows out of the asked order
    assert results_match(result(), result(), ordered=False)
