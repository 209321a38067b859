"""The benchmark tables read from runs' records: benchmarks/verdict_table.py on two runs stopped at different points
(with ``--common`` both sides are read on the questions both answered, so accuracy and the sign test compare the same
questions), and benchmarks/lint_firings.py on the chosen reading or on any reading drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import script

table = script("benchmarks/verdict_table.py")
firings = script("benchmarks/lint_firings.py")


def run(folder: Path, rights: list[bool]) -> Path:
    """A run of V2 whose i-th answer (question ``q{i}``) is right where ``rights[i]``."""
    folder.mkdir()
    rows = [{"program": "v2", "index": i, "question": f"q{i}", "sql": "SELECT 1", "executes": True, "correct": right,
             "confidence": 0.8 if right else 0.2, "metrics": {"latency_s": 1.0}} for i, right in enumerate(rights)]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.mark.parametrize(("common", "questions", "right"), [
    ([], ("4", "2"), ("2", "1")),  # as written: each side on its own questions
    (["--common"], ("2", "2"), ("1", "1")),  # both on the two both answered
])
def test_common_reads_both_runs_on_the_questions_both_answered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], common: list[str], questions: tuple, right: tuple) -> None:
    before = run(tmp_path / "before", [True, False, True, False])
    after = run(tmp_path / "after", [True, False])
    assert table.main([str(before), str(after), *common]) == 0
    lines = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert tuple(lines["questions"]) == questions and tuple(lines["right"]) == right



def test_a_conversations_verdict_rows_also_count_other_columns_as_right() -> None:
    # (turn, right, right with other columns allowed, verdict)
    turns = [(0, True, True, "likely right"), (1, False, True, "likely right"), (1, False, False, "likely right"),
             (1, False, True, "check this"), (0, False, False, "likely wrong")]
    rows = [{"interaction": 0, "turn": t, "correct": right, "correct_relaxed": relaxed, "verdict": verdict,
             "confidence": 0.9 if verdict == "likely right" else 0.4, "sql": "SELECT 1", "executes": True,
             "metrics": {"latency_s": 1.0}} for t, right, relaxed, verdict in turns]
    found = table.figures(rows, sure=0.9)
    assert (found["likely right"], found["likely right, right"]) == (3, 1)
    assert found["likely right, right, other columns allowed"] == 2
    assert found["confidence AUC"] == 0.75 and found["confidence AUC, other columns allowed"] == pytest.approx(3.5 / 6)


STORED = {"cut_off": "stand-alone", "sure": 0.9, "doubtful": 0.3, "noted": False, "valid": True, "submitted": True}
WARNED = [{"chosen": True, "valid": True, "findings": [{"kind": "empty result", "message": "no rows"}]}]


@pytest.mark.parametrize(("record", "expected"), [
    ({"confidence": 0.95, "verdict_inputs": STORED, "verdict": "check this"}, "likely right"),  # the inputs decide
    ({"confidence": 0.95, "verdict_inputs": {**STORED, "noted": True}}, "check this"),
    ({"confidence": 0.2, "verdict_inputs": {**STORED, "cut_off": "calibration", "sure": None}}, "likely wrong"),
    ({"confidence": 0.95, "verdict": "check this"}, "check this"),  # older: the words it was given
    ({"confidence": 0.95, "verdict": ""}, None),  # older still, unrated
    ({"confidence": 0.95, "verdict": "uncalibrated"}, None),
    ({"confidence": 0.95}, "likely right"),  # the oldest: at --sure, by the one rule
    ({"confidence": 0.85}, "check this"),
    ({"confidence": 0.1}, "check this"),  # no "likely wrong" cut-off was kept
    ({"confidence": 0.95, "readings": WARNED}, "check this"),  # a warning on its chosen reading
    ({"confidence": 0.95, "readings": [{**WARNED[0], "findings": [{"kind": "a kind since retired"}]}]},
     "likely right"),
    ({"confidence": 0.95, "readings": [{"chosen": True, "valid": False}]}, "likely wrong"),
    ({"confidence": 0.95, "sql": ""}, "likely wrong"),  # no query
])
def test_records_old_and_new_are_worded_by_the_one_rule(record: dict, expected: str | None) -> None:
    found = table.verdict({"sql": "SELECT 1", **record}, sure=0.9)
    assert (None if found is None else found.value) == expected


def test_a_verifier_words_a_run_again_by_its_cut_offs_for_each_record_s_kind() -> None:
    from text2sql_dspy.programs.agents.verifier import Verifier

    model = {"names": ["confidence"], "coefficients": [0.0], "intercept": 0.0, "means": [0.0], "scales": [1.0]}
    verifier = Verifier.from_json({"early": model, "full": model, "sure": 0.8, "doubtful": 0.2, "judge_helps": False,
                                   "fitted_on": {}, "cut_offs": {"follow-up": 0.97, "stand-alone early": 0.6}})
    stored = {"sql": "SELECT 1", "confidence": 0.85, "verdict_inputs": STORED}
    assert table.verdict(stored, 0.9).value == "check this"  # its own cut-off, 0.9
    assert table.verdict(stored, 0.9, verifier).value == "likely right"  # the other verifier's, 0.8
    follow_up = {**stored, "verdict_inputs": {**STORED, "cut_off": "follow-up"}}
    assert table.verdict(follow_up, 0.9, verifier).value == "check this"  # its follow-ups' 0.97
    calibrated = {**stored, "verdict_inputs": {**STORED, "cut_off": "calibration"}}
    assert table.verdict(calibrated, 0.9, verifier).value == "check this"  # a calibration's cut-offs stay its own
    early = {"sql": "SELECT 1", "confidence": 0.65, "drafts": 1, "steps": [{"kind": "verify"}], "verdict": "x"}
    assert table.verdict(early, 0.9, verifier).value == "likely right"  # older: the kind read off its steps


def test_a_run_without_the_programs_records_is_an_error_that_names_the_option(tmp_path: Path) -> None:
    before, after = run(tmp_path / "before", [True]), run(tmp_path / "after", [True])
    with pytest.raises(SystemExit, match="no records of program 'baseline'.*it holds: v2.*--program"):
        table.main([str(before), str(after), "--program", "baseline"])

def answer(right: bool, *readings: tuple[bool, list[str]]) -> dict:
    """An answer whose readings are (chosen, finding kinds)."""
    return {"correct": right, "readings": [{"chosen": chosen, "findings": [{"kind": k} for k in kinds]}
                                           for chosen, kinds in readings]}


ANSWERS = [
    answer(True, (True, ["empty result"]), (False, ["unknown column", "fan-out"])),
    answer(False, (False, ["unknown column"]), (True, ["fan-out", "fan-out"])),
    answer(False, (False, ["unknown table"])),  # no query chosen
]


@pytest.mark.parametrize(("any_reading", "expected"), [
    (False, {"empty result": (1, 1), "fan-out": (1, 0)}),
    (True, {"unknown column": (2, 1), "fan-out": (2, 1), "empty result": (1, 1), "unknown table": (1, 0)}),
])
def test_lint_firings_count_answers_by_the_chosen_reading_or_by_any(any_reading: bool, expected: dict) -> None:
    assert firings.firings(ANSWERS, any_reading=any_reading) == expected
