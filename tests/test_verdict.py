"""One verdict in words, one rule (programs/verdict.py): its table, the inputs an answer keeps it is decided from, and
every answer worded from them."""

from __future__ import annotations

import json

import pytest

from text2sql_dspy.programs.agents.verifier import Verifier, kind_of
from text2sql_dspy.programs.answer import Answer, Reading
from text2sql_dspy.programs.calibration import DOUBTFUL_FLOOR, Calibration
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.verdict import (
    CALIBRATION,
    UNRATED,
    Verdict,
    VerdictInputs,
    level_of,
    verdict_of,
    words_of,
)

RIGHT, CHECK, WRONG = Verdict.LIKELY_RIGHT, Verdict.CHECK, Verdict.LIKELY_WRONG
# the shipped verifier's cut-offs, rounded: stand-alone 0.90, follow-up 0.91, stand-alone early 0.89, doubtful 0.31
VERIFIER = {"stand-alone": 0.90, "follow-up": 0.91, "stand-alone early": 0.89, "follow-up early": 0.88}


def by_verifier(kind: str, **inputs: bool) -> VerdictInputs:
    return VerdictInputs(cut_off=kind, sure=VERIFIER[kind], doubtful=0.31, **inputs)


def by_calibration(sure: float | None = 0.7, doubtful: float = DOUBTFUL_FLOOR, **inputs: bool) -> VerdictInputs:
    return VerdictInputs(cut_off=CALIBRATION, sure=sure, doubtful=doubtful, **inputs)


CASES = [  # the inputs, the probability -> the verdict
    (by_verifier("stand-alone"), 0.95, RIGHT),
    (by_verifier("stand-alone"), 0.90, RIGHT),  # at the cut-off
    (by_verifier("stand-alone"), 0.89, CHECK),
    (by_verifier("stand-alone", noted=True), 0.95, CHECK),  # a warning the user should read: never "likely right"
    (by_verifier("stand-alone", valid=False), 0.95, WRONG),  # a query that failed validation gives no result
    (by_verifier("stand-alone", submitted=False), 0.95, CHECK),  # a best effort, never submitted
    (by_verifier("stand-alone", valid=False, submitted=False), 0.0, WRONG),  # no query passed the validator
    (by_verifier("stand-alone"), 0.31, CHECK),  # at "doubtful": not below it
    (by_verifier("stand-alone"), 0.30, WRONG),
    (by_verifier("stand-alone", noted=True), 0.30, WRONG),
    (by_verifier("follow-up"), 0.905, CHECK),  # a follow-up's cut-off is its own
    (by_verifier("follow-up"), 0.91, RIGHT),
    (by_verifier("stand-alone early"), 0.895, RIGHT),  # the early model's cut-off, where it alone gave the probability
    (by_verifier("follow-up early"), 0.885, RIGHT),
    (by_calibration(), 0.73, RIGHT),
    (by_calibration(noted=True), 0.73, CHECK),
    (by_calibration(valid=False), 0.73, WRONG),
    (by_calibration(sure=None), 0.99, CHECK),  # a calibration that found no cut-off as sure
    (by_calibration(), 0.31, CHECK),  # the floor where the calibration fitted no "doubtful" of its own: 0.3
    (by_calibration(), 0.29, WRONG),
    (by_calibration(doubtful=0.45), 0.40, WRONG),  # ... and its own, fitted as the verifier's is
    (by_calibration(doubtful=0.45), 0.45, CHECK),
]


@pytest.mark.parametrize(("inputs", "p", "expected"), CASES)
def test_the_verdict_table(inputs: VerdictInputs, p: float, expected: Verdict) -> None:
    assert inputs.verdict(p) is expected
    assert verdict_of(p, sure=inputs.sure, doubtful=inputs.doubtful, noted=inputs.noted, valid=inputs.valid,
                      submitted=inputs.submitted) is expected
    answer = Answer(question="q", sql="SELECT 1", status="answered", confidence=p, verdict_inputs=inputs)
    assert answer.verdict == expected.value == words_of(p, inputs)
    kept = json.loads(answer.model_dump_json())  # as ask --json prints it and an evaluate record keeps it
    assert kept["verdict"] == expected.value and Answer.model_validate(kept).verdict == expected.value


@pytest.mark.parametrize(("words", "level"), [("likely right", "good"), ("check this", "warn"),
                                              ("likely wrong", "bad"), (UNRATED, "warn")])
def test_how_a_page_colours_a_verdict(words: str, level: str) -> None:
    assert level_of(words) == level


def test_a_program_s_own_score_reads_no_verdict_however_high() -> None:
    baseline = Answer(question="q", sql="SELECT 1", status="answered", confidence=0.99)  # token confidence
    assert baseline.verdict == UNRATED == words_of(0.99, None)
    assert baseline.confidence_line.startswith("confidence 0.99 (uncalibrated")


def test_words_given_to_an_answer_are_not_taken_only_its_inputs_decide() -> None:
    said = Answer.model_validate({"question": "q", "sql": "SELECT 1", "status": "answered", "confidence": 0.2,
                                  "verdict": "likely right", "sure": True})  # an older record's fields
    assert said.verdict == UNRATED and "sure" not in said.model_dump()


@pytest.mark.parametrize(("early", "follow_up"), [(False, False), (True, False), (False, True), (True, True)])
def test_the_verifier_s_inputs_name_the_kind_and_the_cut_offs_it_applied(early: bool, follow_up: bool) -> None:
    verifier = Verifier.from_json({**_verifier_json(), "cut_offs": dict(VERIFIER)})
    inputs = verifier.inputs(early=early, follow_up=follow_up, noted=True)
    kind = kind_of(early=early, follow_up=follow_up)
    assert inputs == VerdictInputs(cut_off=kind, sure=VERIFIER[kind], doubtful=0.31, noted=True)
    assert verifier.words(0.95, early=early, follow_up=follow_up) == RIGHT.value


def test_a_calibration_words_the_answer_by_its_own_cut_offs_and_keeps_a_best_effort_one() -> None:
    calibration = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.7, doubtful=0.45)
    empty = Finding(kind=Kind.EMPTY_RESULT, message="no rows")
    answer = Answer(question="q", sql="SELECT 1", status="answered", confidence=0.2,
                    readings=[Reading(sql="SELECT 1", chosen=True, valid=True, findings=[empty])],
                    verdict_inputs=by_verifier("follow-up", submitted=False))
    assert calibration.inputs(answer) == by_calibration(doubtful=0.45, noted=True, submitted=False)


def _verifier_json() -> dict:
    model = {"names": ["confidence"], "coefficients": [0.0], "intercept": 0.0, "means": [0.0], "scales": [1.0]}
    return {"early": model, "full": model, "sure": 0.90, "doubtful": 0.31, "judge_helps": False, "fitted_on": {}}
