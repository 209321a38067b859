"""Each benchmark scored as its own evaluator scores it: BIRD's rows as sets, Spider's as a multiset."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from text2sql_dspy.programs.dataset import scoring_of
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.results import Scoring, columns_subset_match, results_match


def result(*rows: tuple) -> QueryResult:
    return QueryResult(columns=[f"c{i}" for i in range(len(rows[0]) if rows else 0)], rows=list(rows))


# (case, predicted rows, gold rows, whether the gold query orders its rows, BIRD's verdict, Spider's verdict)
CASES = [
    ("the same rows", [(1, "a"), (2, "b")], [(1, "a"), (2, "b")], False, True, True),
    ("a duplicated predicted row", [(1, "a"), (1, "a"), (2, "b")], [(1, "a"), (2, "b")], False, True, False),
    ("a duplicated gold row", [(1, "a")], [(1, "a"), (1, "a")], False, True, False),
    ("a different order, gold unordered", [(2, "b"), (1, "a")], [(1, "a"), (2, "b")], False, True, True),
    ("a different order, gold ordered", [(2, "b"), (1, "a")], [(1, "a"), (2, "b")], True, True, False),
    ("a row missing", [(1, "a")], [(1, "a"), (2, "b")], False, False, False),
    ("a row more", [(1, "a"), (2, "b"), (3, "c")], [(1, "a"), (2, "b")], False, False, False),
    ("a column fewer", [(1,), (2,)], [(1, "a"), (2, "b")], False, False, False),
    ("a column more", [(1, "a", 0), (2, "b", 0)], [(1, "a"), (2, "b")], False, False, False),
    ("the columns swapped", [("a", 1), ("b", 2)], [(1, "a"), (2, "b")], False, False, True),
    ("values paired otherwise", [(1, "b"), (2, "a")], [(1, "a"), (2, "b")], False, False, False),
    ("NULLs alike", [(None,), (1,)], [(1,), (None,)], False, True, True),
    ("NULL against 0", [(0,)], [(None,)], False, False, False),
    ("NULL against ''", [("",)], [(None,)], False, False, False),
    ("NULL rows, one duplicated", [(None, None), (None, None)], [(None, None)], False, True, False),
    ("1.0 is 1, Decimal is float", [(1.0, Decimal("2.5"))], [(1, 2.5)], False, True, True),
    ("both empty", [], [], False, True, True),
    ("empty against a row", [], [(1,)], False, False, False),
    ("a row against empty", [(1,)], [], False, False, False),
]


@pytest.mark.parametrize(("case", "pred", "gold", "ordered", "bird", "spider"), CASES, ids=[c[0] for c in CASES])
def test_bird_compares_rows_as_sets_spider_as_a_multiset(
    case: str, pred: list, gold: list, ordered: bool, bird: bool, spider: bool,
) -> None:
    assert results_match(result(*pred), result(*gold), ordered=ordered, scoring=Scoring.BIRD) is bird
    assert results_match(result(*pred), result(*gold), ordered=ordered, scoring=Scoring.SPIDER) is spider
    assert results_match(result(*pred), result(*gold), ordered=ordered) is spider  # Spider's rule is the default


@pytest.mark.parametrize(
    ("pred", "gold", "relaxed"),
    [
        ([("a", 1), ("b", 2)], [(1, "a"), (2, "b")], True),  # the columns swapped: right, other columns
        ([("b", 1), ("a", 2)], [(1, "a"), (2, "b")], False),  # the columns swapped, values paired otherwise
        ([("a",), ("a",), ("b",)], [(1, "a"), (2, "b")], True),  # the names asked for, one repeated
        ([("a",), ("a",)], [(1, "a"), (2, "a")], True),  # a column of the gold rows, duplicates aside
        ([("a",), ("c",)], [(1, "a"), (2, "b")], False),
    ],
)
def test_bird_relaxed_match_cuts_the_wider_result_to_the_narrower_as_sets(pred: list, gold: list,
                                                                          relaxed: bool) -> None:
    assert columns_subset_match(result(*pred), result(*gold), ordered=False, scoring=Scoring.BIRD) is relaxed


def test_each_rule_says_what_it_is() -> None:
    assert "BIRD's evaluator: rows as sets" in Scoring.BIRD.description
    assert "Spider's test-suite evaluation: rows as a multiset, in order when the gold query orders" \
        in Scoring.SPIDER.description


def _questions(folder: Path, split: str, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}.json").write_text(json.dumps(records))
    return folder


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("spider", Scoring.SPIDER),
        ("sparc", Scoring.SPIDER),
        ("bird: evidence", Scoring.BIRD),
        ("bird: difficulty", Scoring.BIRD),
        ("bird: dev_databases", Scoring.BIRD),
        ("bird: database_description", Scoring.BIRD),
    ],
)
def test_a_bird_layout_is_scored_by_birds_rule(tmp_path: Path, layout: str, expected: Scoring) -> None:
    folder = tmp_path / "data"
    spider = {"db_id": "tiny", "question": "q", "query": "SELECT 1"}
    if layout == "spider":
        _questions(folder, "dev", [spider])
        (folder / "database" / "tiny").mkdir(parents=True)
    elif layout == "sparc":
        _questions(folder, "dev", [{"database_id": "tiny", "interaction": [{"utterance": "q", "query": "SELECT 1"}]}])
    elif layout == "bird: evidence":
        _questions(folder, "dev", [{"db_id": "tiny", "question": "q", "evidence": "", "SQL": "SELECT 1"}])
    elif layout == "bird: difficulty":
        _questions(folder, "dev", [{"db_id": "tiny", "question": "q", "SQL": "SELECT 1", "difficulty": "simple"}])
    elif layout == "bird: dev_databases":
        _questions(folder, "dev", [spider])
        (folder / "dev_databases" / "tiny").mkdir(parents=True)
    else:
        _questions(folder, "dev", [spider])
        (folder / "database" / "tiny" / "database_description").mkdir(parents=True)
    assert scoring_of(folder, "dev") is expected


def test_the_bundled_data_is_scored_by_spiders_rule() -> None:
    from text2sql_dspy.programs.bundled import BUNDLED_DATA

    assert scoring_of(BUNDLED_DATA, "test") is Scoring.SPIDER
