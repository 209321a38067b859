"""One verdict in words, one rule (programs/verdict.py): its table, and every surface reading it."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.verdict import UNRATED, Verdict, level_of, verdict_of
from text2sql_dspy.programs.web.answer import confidence_words

CASES = [  # probability, sure, doubtful, noted, valid -> verdict
    (0.95, 0.9, 0.3, False, True, Verdict.LIKELY_RIGHT),
    (0.90, 0.9, 0.3, False, True, Verdict.LIKELY_RIGHT),  # at the cut-off
    (0.95, 0.9, 0.3, True, True, Verdict.CHECK),  # a warning the user should read: never "likely right"
    (0.89, 0.9, 0.3, False, True, Verdict.CHECK),
    (0.30, 0.9, 0.3, False, True, Verdict.CHECK),
    (0.29, 0.9, 0.3, False, True, Verdict.LIKELY_WRONG),
    (0.29, 0.9, 0.3, True, True, Verdict.LIKELY_WRONG),
    (0.99, None, 0.5, False, True, Verdict.CHECK),  # a calibration that found no cut-off as sure
    (0.99, 0.9, 0.3, False, False, Verdict.CHECK),  # a query that failed validation (or whose dry run erred)
    (0.10, 0.9, 0.3, False, False, Verdict.LIKELY_WRONG),
]


@pytest.mark.parametrize(("p", "sure", "doubtful", "noted", "valid", "expected"), CASES)
def test_the_verdict_table(p: float, sure: float | None, doubtful: float, noted: bool, valid: bool,
                           expected: Verdict) -> None:
    assert verdict_of(p, sure=sure, doubtful=doubtful, noted=noted, valid=valid) is expected


@pytest.mark.parametrize(("words", "level"), [("likely right", "good"), ("check this", "warn"),
                                              ("likely wrong", "bad"), (UNRATED, "warn")])
def test_how_a_page_colours_a_verdict(words: str, level: str) -> None:
    assert level_of(words) == level


def test_a_program_s_own_score_reads_no_verdict_however_high() -> None:
    baseline = Answer(question="q", sql="SELECT 1", status="answered", confidence=0.99)  # token confidence
    assert confidence_words(baseline) == UNRATED and baseline.confidence_line.startswith("confidence 0.99 "
                                                                                         "(uncalibrated")
