"""The per-database calibration: its fit, its cut-offs for "likely right" and "likely wrong", where it is kept, and
``text2sql calibrate``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import dspy
import numpy as np
import pytest
from dspy.utils import DummyLM

from tests.fakes import draft
from text2sql_dspy.cli import EXIT_USER_ERROR, main
from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.answer import Answer, Metrics, Reading, Status
from text2sql_dspy.programs.calibration import (
    DOUBTFUL_FLOOR,
    MIN_ANSWERS,
    Calibration,
    consistency,
    doubtful_threshold,
    fit,
    load_calibration,
    save_calibration,
    signals,
    sure_threshold,
)
from text2sql_dspy.programs.examples.identity import database_key
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.verdict import CALIBRATION, VerdictInputs


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cache of this test's own: a calibration saved here is seen by no other test."""
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("probabilities", "right", "minimum", "expected"),
    [
        ([0.9] * 10 + [0.4] * 10, [True] * 10 + [False] * 10, 10, 0.9),  # the top ten all right
        ([0.9] * 10 + [0.4] * 10, [True] * 9 + [False] * 11, 10, 0.9),  # 9 of 10: exactly 90%
        ([0.9] * 10 + [0.4] * 10, [True] * 8 + [False] * 12, 10, None),  # 8 of 10: never sure
        ([0.9] * 5 + [0.8] * 15, [True] * 20, 10, 0.8),  # five are too few alone: the cut-off goes lower
        ([0.9] * 5 + [0.8] * 15, [True] * 5 + [False] * 15, 10, None),
        ([0.7] * 20, [True] * 19 + [False], 10, 0.7),  # ties are kept together, never split
    ],
)
def test_sure_threshold(probabilities: list[float], right: list[bool], minimum: int, expected: float | None) -> None:
    assert sure_threshold(probabilities, right, minimum=minimum) == expected


@pytest.mark.parametrize(
    ("probabilities", "right", "expected"),
    [
        ([0.1] * 10 + [0.6] * 10, [True] * 3 + [False] * 7 + [True] * 10, 0.6),  # 3 of the 10 below 0.6: at most 30%
        ([0.1] * 10 + [0.6] * 10, [True] * 4 + [False] * 6 + [True] * 10, DOUBTFUL_FLOOR),  # 4 of 10: too often right
        ([0.1] * 9 + [0.6] * 11, [False] * 9 + [True] * 11, DOUBTFUL_FLOOR),  # nine below are too few
        ([0.1] * 10 + [0.2] * 5 + [0.7] * 5, [False] * 10 + [True, False, False, False, False] + [True] * 5, 0.7),
        # the highest such cut-off: below 0.2, 0 of 10; below 0.7, 1 of 15
        ([0.1] * 10 + [0.2] * 10, [False] * 10 + [True] * 10, 0.2),  # ties below are all counted, none split
        ([], [], DOUBTFUL_FLOOR),
    ],
)
def test_doubtful_threshold(probabilities: list[float], right: list[bool], expected: float) -> None:
    assert doubtful_threshold(probabilities, right) == expected


def test_the_doubtful_cut_off_never_passes_the_sure_one() -> None:
    probabilities = [0.1] * 100 + [0.5] * 20 + [0.9] * 5  # 100 wrong, then 25 right: 20 of 120 below 0.9 are right
    right = [False] * 100 + [True] * 25
    assert doubtful_threshold(probabilities, right) == 0.9
    sure = sure_threshold(probabilities, right)
    assert sure == 0.5 and doubtful_threshold(probabilities, right, sure=sure) == 0.5


def answer(**fields: object) -> Answer:
    """An answered question with these fields: its query valid, unless it has none."""
    sql = str(fields.pop("sql", "SELECT 1"))
    readings = [Reading(sql=sql, chosen=True, valid=True)] if sql else []
    return Answer(question="q", sql=sql, status=Status.ANSWERED if sql else Status.FAILED, readings=readings, **fields)


def answers(judge_right: float, judge_wrong: float, n_right: int, n_wrong: int) -> list[tuple[Answer, bool]]:
    def judged(score: float) -> Answer:
        return answer(judge_score=score, confidence=0.5, metrics=Metrics(lm_calls=3))

    return [(judged(judge_right), True)] * n_right + [(judged(judge_wrong), False)] * n_wrong


def test_fit_learns_which_signal_tells_right_from_wrong_and_survives_a_round_trip() -> None:
    calibration = fit(answers(0.9, 0.2, 30, 10), model="m")
    assert calibration is not None and (calibration.answers, calibration.right, calibration.model) == (40, 30, "m")
    high = calibration.probability(answers(0.9, 0.2, 1, 0)[0][0])
    low = calibration.probability(answers(0.9, 0.2, 0, 1)[0][0])
    assert high > 0.8 and low < 0.5  # regularised: a perfect split on 40 answers is not taken as certainty
    assert calibration.probability(answer(sql="")) == 0.0  # no query is never right
    assert calibration.held_out_ece is not None and calibration.sure_at is not None and high >= calibration.sure_at
    assert low < calibration.doubtful <= calibration.sure_at  # the ten wrong answers lie below it, out of fold too
    assert Calibration.from_json(calibration.to_json()) == calibration


def test_a_calibration_saved_before_it_fitted_a_doubtful_cut_off_reads_the_floor() -> None:
    older = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.7).to_json()
    del older["doubtful"]
    assert Calibration.from_json(older).doubtful == DOUBTFUL_FLOOR


@pytest.mark.parametrize(
    "data",
    [answers(0.9, 0.2, MIN_ANSWERS - 2, 1), answers(0.9, 0.2, 30, 0), answers(0.9, 0.2, 0, 30)],
    ids=["too few", "all right", "all wrong"],
)
def test_no_calibration_from_too_few_answers_or_one_class(data: list[tuple[Answer, bool]]) -> None:
    assert fit(data) is None


@pytest.mark.parametrize(
    ("fields", "judge_and_confidence"),
    [
        ({"confidence": 0.93, "raw_confidence": 0.41, "judge_score": None}, [0.5, 0.41]),  # the program's own score
        ({"confidence": 0.62, "raw_confidence": None, "judge_score": 0.8}, [0.8, 0.62]),  # not calibrated: as given
        ({}, [0.5, 0.0]),
    ],
)
def test_signals_read_the_programs_own_confidence_not_the_calibrated_one(fields: dict,
                                                                         judge_and_confidence: list) -> None:
    assert signals(answer(**fields))[:2] == judge_and_confidence


def test_consistency_tells_a_calibrated_probability_from_an_overconfident_one() -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0.2, 0.9, 200)
    calibrated = list(zip(p.tolist(), (rng.random(200) < p).tolist()))
    overconfident = [(0.9, i % 2 == 0) for i in range(200)]  # said 90%, right half the time
    assert consistency(calibrated) > 0.05
    assert consistency(overconfident) < 0.01


def test_a_saved_calibration_applies_to_its_database_program_and_model_only(tiny_db: Path, tmp_path: Path) -> None:
    source = open_source(tiny_db)
    program = Baseline(tiny_db, retrieval_type="keyword")
    lm = DummyLM([draft("SELECT count(*) FROM users")] * 2)
    with dspy.context(lm=lm):
        plain = program.run("How many users are there?")
    assert not plain.calibrated and "uncalibrated" in plain.confidence_line
    calibration = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.7, model="dummy")
    name = program.calibration_name()
    assert name.startswith("Baseline-") and name == Baseline(tiny_db, retrieval_type="keyword").calibration_name()
    save_calibration(calibration, database_key(source), name)
    assert load_calibration(database_key(source), name, "other-model") is None
    assert load_calibration(database_key(source), "ReActAgentV2" + name[len("Baseline"):], "dummy") is None
    with dspy.context(lm=lm):
        answer = program.run("How many users are there?")
    assert answer.calibrated and answer.confidence == pytest.approx(1 / (1 + np.exp(-1.0)))
    assert answer.verdict_inputs == VerdictInputs(cut_off=CALIBRATION, sure=0.7, doubtful=DOUBTFUL_FLOOR)
    assert answer.confidence_line.startswith(f"likely right ({answer.confidence:.2f}; calibrated on 40 verified")

    compiled = program.deepcopy()  # tuned prompts: another program, whose answers the plain one's map does not fit
    compiled.draft.demos = [dspy.Example(question="How many users?", sql="SELECT count(*) FROM users")]
    assert compiled.calibration_name() != name
    with dspy.context(lm=lm):
        assert not compiled.run("How many users are there?").calibrated


QUESTIONS = [f"Question number {i} please" for i in range(24)]


def test_calibrate_answers_each_stored_pair_and_saves_the_fit(
    capsys: pytest.CaptureFixture[str], tiny_db: Path, tmp_path: Path
) -> None:
    tiny_db = Path(shutil.copy(tiny_db, tmp_path / "tiny.sqlite"))  # its data changes below
    store_path = tmp_path / "examples.sqlite"
    store = ExampleStore(store_path)
    source = open_source(tiny_db)
    for i, question in enumerate(QUESTIONS):
        store.add_pair(source, question, f"SELECT id FROM users WHERE id > {i % 3}")
    replies = {q: draft(f"SELECT id FROM users WHERE id > {i % 3 if i % 4 else 7}") for i, q in enumerate(QUESTIONS)}
    with dspy.context(lm=DummyLM(replies)):
        assert main(["calibrate", "--db", str(tiny_db), "--program", "baseline", "--examples", str(store_path),
                     "--no-examples", "--retrieval", "keyword"]) == 0
    out = capsys.readouterr().out
    assert "18 of 24 answered right" in out  # every fourth reply returns other rows
    name = Baseline(tiny_db, retrieval_type="keyword").calibration_name()  # the program the command built
    calibration = load_calibration(database_key(source), name, "dummy")
    assert calibration is not None and (calibration.answers, calibration.right) == (24, 18)
    assert calibration.probability(answer(confidence=0.5)) == pytest.approx(0.75, abs=0.05)

    # a later run answers only the pair added since; the others' answers were kept
    store.add_pair(source, "Question number 99 please", "SELECT id FROM users WHERE id > 0")
    with dspy.context(lm=DummyLM({"Question number 99 please": draft("SELECT id FROM users WHERE id > 0")})):
        assert main(["calibrate", "--db", str(tiny_db), "--program", "baseline", "--examples", str(store_path),
                     "--no-examples", "--retrieval", "keyword"]) == 0
    assert "19 of 25 answered right" in capsys.readouterr().out

    # the data changes: every kept answer is scored again on it, none answered again (no reply is scripted)
    with sqlite3.connect(tiny_db) as conn:
        conn.execute("DELETE FROM users WHERE id = 3")  # 'id > 7' now returns what 'id > 2' does: two more right
    with dspy.context(lm=DummyLM([])):
        assert main(["calibrate", "--db", str(tiny_db), "--program", "baseline", "--examples", str(store_path),
                     "--no-examples", "--retrieval", "keyword"]) == 0
    assert "21 of 25 answered right" in capsys.readouterr().out


def test_calibrate_refuses_a_database_with_too_few_pairs(capsys: pytest.CaptureFixture[str], tiny_db: Path,
                                                         tmp_path: Path) -> None:
    with dspy.context(lm=DummyLM([])):
        code = main(["calibrate", "--db", str(tiny_db), "--program", "baseline",
                     "--examples", str(tmp_path / "empty.sqlite"), "--retrieval", "keyword"])
    assert code == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert f"0 verified pairs stored for this database; calibrating needs at least {MIN_ANSWERS}" in err


def test_a_calibrated_answer_whose_query_fails_validation_is_likely_wrong(tiny_db: Path, tmp_path: Path) -> None:
    source = open_source(tiny_db)
    program = Baseline(tiny_db, retrieval_type="keyword")
    calibration = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.7, model="dummy")
    save_calibration(calibration, database_key(source), program.calibration_name())
    with dspy.context(lm=DummyLM([draft("SELECT no_such_column FROM users")] * 2)):
        answer = program.run("How many users are there?")
    assert answer.calibrated and not answer.valid and answer.confidence > calibration.sure_at
    assert answer.verdict == "likely wrong"  # it gives no result, whatever the probability
    assert answer.verdict_inputs is not None and not answer.verdict_inputs.valid
