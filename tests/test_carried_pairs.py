"""Solved pairs carried from other databases: which ones a question is shown, how, and that their names stay theirs."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from tests.fakes import logprob_lm, scripted_draft
from text2sql_dspy.programs.agents.base import question_facts
from text2sql_dspy.programs.agents.ensemble import Ensemble
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.carried_pairs import CARRIED_HEADER, CarriedPairs
from text2sql_dspy.programs.examples.selector import PAIRS_HEADER, mask_words
from text2sql_dspy.programs.examples.store import StoredExample
from text2sql_dspy.programs.source import open_source

KENNELS = {"db_id": "kennels", "table_names_original": ["Dogs", "Owners"],
           "column_names_original": [[-1, "*"], [0, "dog_id"], [0, "breed_name"], [1, "owner_id"], [1, "city"]]}
ROWS = [
    {"db_id": "kennels", "question": "How many dogs are there?", "query": "SELECT count(*) FROM Dogs"},
    {"db_id": "kennels", "question": "Which city has the most owners?",
     "query": "SELECT city FROM Owners GROUP BY city ORDER BY count(*) DESC LIMIT 1"},
    {"db_id": "kennels", "question": "List the breed names of dogs, alphabetically.",
     "query": "SELECT breed_name FROM Dogs ORDER BY breed_name"},
    {"db_id": "tiny", "question": "How many users are suspended?",  # the asked database's own: never carried to it
     "query": "SELECT count(*) FROM users WHERE status = 'suspended'"},
]


@pytest.fixture()
def pool_folder(tmp_path: Path) -> Path:
    (tmp_path / "train.json").write_text(json.dumps(ROWS))
    (tmp_path / "tables.json").write_text(json.dumps([KENNELS]))
    return tmp_path


# (question, its database's name parts, masked)
MASK_CASES = [
    ("How many dogs are there?", {"dogs", "dog"}, "How many <mask> are there?"),
    ("Owners in 'Paris' older than 30", {"owners"}, "<mask> in <unk> older than <unk>"),
    ("Which breed_name is rarest?", {"breed_name", "breed", "name"}, "Which <mask> is rarest?"),
    ("Nothing named here.", set(), "Nothing named here."),
]


@pytest.mark.parametrize(("question", "names", "masked"), MASK_CASES)
def test_a_question_is_masked_by_its_own_databases_names(question: str, names: set[str], masked: str) -> None:
    assert mask_words(question, names) == masked


def test_the_nearest_pairs_of_other_databases_are_shown_never_the_asked_ones(pool_folder: Path, tiny_db: Path) -> None:
    pool = CarriedPairs.from_split(pool_folder, k=2)
    assert len(pool) == 4
    shown = pool.pairs(open_source(tiny_db), "How many users are suspended?")
    assert [p.db_key for p in shown] == ["kennels", "kennels"]
    assert shown[0].sql == "SELECT count(*) FROM Dogs", "the nearest masked question ('How many <mask> ...') first"
    assert CarriedPairs.from_split(pool_folder, k=0).pairs(open_source(tiny_db), "How many users?") == []


@pytest.mark.parametrize(("file", "text", "message"), [
    ("train.json", None, "Spider's layout"),
    ("tables.json", None, "Spider's layout"),
    ("train.json", "{not json", "Spider's layout"),
    ("tables.json", '{"db_id": "kennels"}', "a JSON list"),
])
def test_a_folder_without_the_pool_names_the_layout_it_needs(pool_folder: Path, file: str, text, message: str) -> None:
    if text is None:
        (pool_folder / file).unlink()
    else:
        (pool_folder / file).write_text(text)
    with pytest.raises(ConfigurationError, match=message):
        CarriedPairs.from_split(pool_folder)


def test_malformed_rows_are_skipped(pool_folder: Path) -> None:
    (pool_folder / "train.json").write_text(json.dumps([*ROWS, "not a pair", {"db_id": "kennels", "question": "?"}]))
    assert len(CarriedPairs.from_split(pool_folder)) == len(ROWS)


def _pair(question: str, sql: str, db: str) -> StoredExample:
    return StoredExample(0, db, "pair", question, sql, "test", "")


OWN = _pair("How many users are blocked?", "SELECT count(*) FROM blocks", "tiny")
LENT = _pair("How many dogs are there?", "SELECT count(*) FROM Dogs", "kennels")

# (own pairs, carried pairs, budget, the headers shown in order)
FACTS_CASES = [
    pytest.param([], [LENT], 300, [CARRIED_HEADER], id="carried alone"),
    pytest.param([OWN], [LENT], 300, [CARRIED_HEADER, PAIRS_HEADER], id="carried first, own pairs nearer the question"),
    pytest.param([OWN], [], 300, [PAIRS_HEADER], id="own alone, as before"),
    pytest.param([OWN], [LENT], 30, [PAIRS_HEADER], id="own pairs fill the budget: nothing carried"),
]


@pytest.mark.parametrize(("own", "carried", "budget", "headers"), FACTS_CASES)
def test_carried_pairs_take_what_the_own_pairs_leave(tiny_db: Path, own, carried, budget: int,
                                                     headers: list[str]) -> None:
    facts = question_facts(open_source(tiny_db), "How many rows?", values=False, pairs=own, carried=carried,
                           budget_tokens=budget)
    found = sorted((facts.index(h), h) for h in (CARRIED_HEADER, PAIRS_HEADER) if h in facts)
    assert [h for _, h in found] == headers
    assert ("FROM Dogs" in facts) is (CARRIED_HEADER in headers)


def test_a_carried_pairs_names_never_reach_the_answer(pool_folder: Path, tiny_db: Path) -> None:
    """The ``pairs`` generator's draft copies the carried pair's table; the validator finds it unknown, and the first
    draft is the answer. The pairs come with the question, after the cached prefix, and only to that generator."""
    question = "How many users are suspended?"
    good = "SELECT count(*) FROM users WHERE status = 'suspended'"
    lm = logprob_lm([scripted_draft(good, 0.5), scripted_draft("SELECT count(*) FROM Dogs", 0.9)])
    program = make_program("v2", db_path=tiny_db, retrieval_type="keyword", carried=pool_folder,
                           ensemble=Ensemble(("draft", "pairs"), 2, None), max_judge_calls=0)
    with dspy.context(lm=lm):
        answer = program(question=question).answer
    first, paired = lm.engine.requests
    for request in (first, paired):
        assert "CREATE TABLE users" in str(request.system) and CARRIED_HEADER not in str(request.system)
    assert CARRIED_HEADER not in (first.messages[-1].text or "")
    assert CARRIED_HEADER in (paired.messages[-1].text or "")
    assert "SELECT count(*) FROM Dogs" in paired.messages[-1].text
    assert answer.sql == good
    dogs = next(r for r in answer.readings if "dogs" in r.sql.lower())
    assert dogs.generator == "pairs" and not dogs.valid and not dogs.chosen


def test_a_calibration_fitted_without_carried_pairs_is_not_applied_with_them(pool_folder: Path, tiny_db: Path) -> None:
    plain = make_program("baseline", db_path=tiny_db, retrieval_type="keyword")
    shown = make_program("baseline", db_path=tiny_db, retrieval_type="keyword", carried=pool_folder)
    assert shown.calibration_name() != plain.calibration_name()
    assert shown.calibration_name() == make_program("baseline", db_path=tiny_db, retrieval_type="keyword",
                                                    carried=pool_folder).calibration_name()
