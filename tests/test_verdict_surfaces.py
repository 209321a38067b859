"""The verdict as a table of cases, read on every surface: each program (baseline, V1, V2), each kind of answer (rows,
an invalid query, one whose dry run errs, an empty result) and a database with and without a saved calibration.
``ask --json``, ``/api/ask``, the page and an ``evaluate`` record must all say the same words, keep the same inputs
they were decided from, and the words must be the rule's on those inputs (:mod:`~text2sql_dspy.programs.verdict`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft, verdict
from tests.web_fakes import FAILED_BY_USER, on_every_surface
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.calibration import Calibration, save_calibration
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.verdict import CALIBRATION as CALIBRATION_CUT_OFF
from text2sql_dspy.programs.verdict import UNRATED, Verdict, VerdictInputs, words_of

QUESTION = "Which users failed to log in, and how often?"
QUERIES = {
    "rows": FAILED_BY_USER,
    "invalid": "SELECT email FROM users WHERE state = 'x'",  # no column "state"
    "erring": "SELECT json_extract(email, '$.a') FROM users",  # parses and names real columns; its dry run errs
    "empty": "SELECT email FROM users WHERE id < 0",  # runs, returns no rows: a warning
}
# A calibration that reads every answer as 1 / (1 + e^-1) = 0.73, at or above its "sure" cut-off of 0.7.
CALIBRATION = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.7, model="dummy")
RIGHT, CHECK, WRONG = Verdict.LIKELY_RIGHT.value, Verdict.CHECK.value, Verdict.LIKELY_WRONG.value

CASES = [  # program, answer, calibrated -> the words every surface shows
    ("baseline", "rows", False, UNRATED),  # a program's own token confidence is no probability
    ("baseline", "invalid", False, UNRATED),
    ("baseline", "empty", False, UNRATED),
    ("v1", "rows", False, RIGHT),  # the shipped verifier's probability, sure
    ("v1", "erring", False, WRONG),  # no query passed the validator: no answer, never right
    ("v2", "rows", False, RIGHT),  # the shipped verifier's probability, judged right, sure
    ("v2", "invalid", False, WRONG),
    ("v2", "erring", False, WRONG),
    ("v2", "empty", False, CHECK),  # an empty result carries a warning: never "likely right"
    ("baseline", "rows", True, RIGHT),  # this database's calibration: sure
    ("baseline", "invalid", True, WRONG),  # sure by the calibration, but the query failed validation (submitted)
    ("baseline", "empty", True, CHECK),  # sure, but with a warning
    ("v1", "erring", True, WRONG),  # the calibration reads no query as never right
    ("v2", "rows", True, RIGHT),  # the calibration, not the shipped verifier, words a calibrated database
    ("v2", "empty", True, CHECK),
]


def scripted(sql: str) -> DummyLM:
    """Every draft writes ``sql`` and every verdict says it is right; replies chosen by what the prompt asks (only
    the judge's input holds a ``sql`` field), so any number of calls is answered."""
    return DummyLM({"[[ ## sql ## ]]": verdict(True), "[[ ## hints ## ]]": draft(sql)})


def calibrate(db: Path, program: str) -> None:
    name = make_program(program, db_path=db, retrieval_type="keyword").calibration_name()
    save_calibration(CALIBRATION, open_source(db).store_key, name)


@pytest.mark.shipped_verifier
@pytest.mark.parametrize(("program", "kind", "calibrated", "words"), CASES)
def test_every_surface_says_the_rule_s_verdict(
    program: str, kind: str, calibrated: bool, words: str, tiny_db: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))  # this case's own calibrations and conversations
    sql = QUERIES[kind]
    if calibrated:
        calibrate(tiny_db, program)
    seen = on_every_surface(tiny_db, tmp_path, capsys, QUESTION, program, lambda: scripted(sql))
    from_cli, from_api, page, record = seen.cli, seen.api, seen.page, seen.record

    assert from_cli["sql"] == from_api["sql"] == record["sql"]
    assert from_cli["calibrated"] is from_api["calibrated"] is record["calibrated"] is calibrated
    assert from_cli["verdict"] == from_api["verdict"] == record["verdict"] == words
    assert from_cli["verdict_inputs"] == from_api["verdict_inputs"] == record["verdict_inputs"]
    inputs = None if record["verdict_inputs"] is None else VerdictInputs.model_validate(record["verdict_inputs"])
    assert words_of(record["confidence"], inputs) == words  # the words, derived again from what the record keeps
    assert (inputs is None) is (words == UNRATED)
    assert (inputs is not None and inputs.cut_off == CALIBRATION_CUT_OFF) is calibrated
    assert f">{words}<" in page or f"{words} (" in page
