"""The verifier's fit (optimize/fit_verifier.py) on a small fixture of collected answers: it writes a verifier that
loads, whose ``fitted_on`` says what it was fitted on, and a refit on the same files writes the same bytes."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from text2sql_dspy.optimize import fit_verifier as fit
from text2sql_dspy.programs.agents.verifier import Verifier
from text2sql_dspy.programs.answer import Answer, Preview, Reading, Status, Step

RIGHT = "SELECT count(*) FROM users WHERE status = 'suspended'"
WRONG = "SELECT count(*) FROM users"


def record(index: int, db_id: str, *, turn: int | None = None) -> dict:
    """A collected question: two judged readings, the right one drafted with more confidence in most questions."""
    sure = 0.9 if index % 5 else 0.6  # a fifth of the questions are less clear-cut
    readings = [
        Reading(sql=RIGHT, valid=True, confidence=sure, weakest=sure - 0.2, tokens=14, votes=2, judge_score=0.8,
                preview=Preview(columns=["count(*)"], rows=[[1]])),
        Reading(sql=WRONG, valid=True, confidence=1.2 - sure, weakest=0.3, tokens=8, votes=1, judge_score=0.4,
                preview=Preview(columns=["count(*)"], rows=[[5]])),
    ]
    first = RIGHT if index % 3 else WRONG
    answer = Answer(question="How many users are suspended?", sql=first, status=Status.ANSWERED, readings=readings,
                    drafts=3, steps=[Step(kind="draft", sql=first)])
    line = {"index": index, "db_id": db_id, "gold": RIGHT, "scoring": "spider",
            "answer": answer.model_dump(mode="json"), "readings_correct": [True, False], "correct": first == RIGHT}
    return line if turn is None else {**line, "interaction": index // 2, "turn": turn}


def collected(path: Path, lines: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fixture(tiny_db: Path, root: Path) -> tuple[Path, Path]:
    """Six databases under ``root`` (copies of ``tiny_db``), and two collected files over them: 36 single questions
    and 12 conversation turns."""
    databases = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    for db_id in databases:
        (root / "database" / db_id).mkdir(parents=True)
        shutil.copy(tiny_db, root / "database" / db_id / f"{db_id}.sqlite")
    return (collected(root / "spider-train.jsonl.gz", [record(i, databases[i % 6]) for i in range(36)]),
            collected(root / "cosql-train.jsonl.gz", [record(i, databases[i % 6], turn=i % 2) for i in range(12)]))


def test_the_fit_writes_a_verifier_that_loads_says_what_it_was_fitted_on_and_refits_byte_for_byte(
    tiny_db: Path, tmp_path: Path
) -> None:
    singles, turns = fixture(tiny_db, tmp_path)
    outs = [tmp_path / "first.json", tmp_path / "again.json"]
    for out in outs:
        assert fit.main([str(singles), str(turns), "--data-root", str(tmp_path), "--out", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    verifier = Verifier.from_json(json.loads(outs[0].read_text()))
    assert verifier.fitted_on["sets"] == ["spider-train", "cosql-train"]
    fitted_on = verifier.fitted_on
    assert (fitted_on["questions"], fitted_on["turns"], fitted_on["databases"]) == (36, 12, 6)
    assert len(verifier.fitted_on["digest"]) == 16
    right = Reading(sql=RIGHT, valid=True, confidence=0.9, weakest=0.7, tokens=14, votes=2, judge_score=0.8,
                    preview=Preview(columns=["count(*)"], rows=[[1]]))
    wrong = right.model_copy(update={"sql": WRONG, "confidence": 0.3, "weakest": 0.3, "tokens": 8, "votes": 1,
                                     "judge_score": 0.4, "preview": Preview(columns=["count(*)"], rows=[[5]])})
    question = "How many users are suspended?"
    assert verifier.probability(right, question, drafts=3, groups=2) > verifier.probability(wrong, question, drafts=3,
                                                                                             groups=2)


def test_a_verifier_written_before_fitted_on_was_an_object_still_loads() -> None:
    model = {"names": ["confidence"], "coefficients": [1.0], "intercept": 0.0, "means": [0.0], "scales": [1.0]}
    data = {"early": model, "full": model, "sure": 0.9, "doubtful": 0.3, "judge_helps": False,
            "fitted_on": "spider-train-v1.jsonl"}
    assert Verifier.from_json(data).fitted_on == {"sets": ["spider-train-v1.jsonl"]}


def test_a_turn_is_fitted_with_the_query_its_conversation_answered_before_it(tiny_db: Path, tmp_path: Path) -> None:
    (tmp_path / "database" / "alpha").mkdir(parents=True)
    shutil.copy(tiny_db, tmp_path / "database" / "alpha" / "alpha.sqlite")
    turns = collected(tmp_path / "cosql-train.jsonl.gz", [record(i, "alpha", turn=i % 2) for i in range(4)])
    rows = list(fit.examples([turns], [tmp_path]))
    assert [r["turn"] for r in rows] == [0, 1, 0, 1]
    assert [r["early"][0]["follow-up"] for r in rows] == [0.0, 1.0, 0.0, 1.0]
    # turn 1 of conversation 0 follows the answer of turn 0 (WRONG, its greedy draft): the right reading adds a filter
    right = next(row for row, _ in rows[1]["full"] if row["follow-up: added"])
    assert right["follow-up: kept"] == 1.0 and right["follow-up: unchanged"] == 0.0


STAND_ALONE = [(0.9 + i / 1000, True) for i in range(12)] + [(0.5, False)] * 4
FOLLOW_UPS_RIGHT = [(0.8 + i / 1000, True) for i in range(12)] + [(0.4, False)] * 4
FOLLOW_UPS_MIXED = [(0.9 + i / 1000, i % 2 == 0) for i in range(16)]  # right half the time at every probability


@pytest.mark.parametrize(("follow_ups", "expected"), [
    ([], (0.9, None)),  # no conversations: a follow-up is cut as a stand-alone question
    (FOLLOW_UPS_RIGHT, (0.9, 0.8)),  # follow-ups get their own cut-off
    (FOLLOW_UPS_MIXED, (0.9, 1.01)),  # none reaches 90% right: a follow-up is never "likely right"
])
def test_the_cut_offs_hold_for_stand_alone_questions_and_follow_ups_apart(follow_ups: list, expected: tuple) -> None:
    pairs = STAND_ALONE + follow_ups
    turns = [None] * len(STAND_ALONE) + [1] * len(follow_ups)
    assert fit.cut_offs(dict(enumerate(pairs)), turns, "sure") == pytest.approx(expected)


@pytest.mark.parametrize(("scores", "right", "asked", "expected"), [
    ([0.9, 0.2, 0.8, 0.1], [True, False, False, True], None, 0.5),  # a question each: the rows' own AUC
    ([0.9, 0.2, 0.8, 0.1], [True, False, False, True], [0, 0, 1, 1], 1.0),  # each question's likeliest row
    ([0.9, 0.95, 0.8, 0.1], [True, False, True, False], [0, 0, 1, 1], 0.0),  # a wrong row above a right one
    ([0.9, 0.2], [True, False], [0, 0], None),  # one question: no AUC
])
def test_final_answers_are_each_questions_likeliest_row(scores: list, right: list, asked: list | None,
                                                          expected: float | None) -> None:
    assert fit.final_auc(scores, right, asked) == expected


FIRST_TURNS_LATER = [(0.95 + i / 1000, True) for i in range(12)] + [(0.92, False)] * 4  # 90% right only above 0.95
FIRST_TURNS_NEVER = [(0.99, i % 2 == 0) for i in range(16)]


@pytest.mark.parametrize(("first_turns", "expected"), [
    ([], 0.9),  # single questions alone
    (FIRST_TURNS_LATER, 0.95),  # the higher: the promise holds for a conversation's first turns too
    ([(p - 0.2, y) for p, y in STAND_ALONE], 0.9),  # first turns reach it lower: the single questions' holds
    (FIRST_TURNS_NEVER, 1.01),  # first turns never reach 90% right: no stand-alone answer is "likely right"
])
def test_the_stand_alone_cut_off_holds_for_single_questions_and_first_turns_apart(
    first_turns: list, expected: float
) -> None:
    pairs = STAND_ALONE + first_turns
    turns = [None] * len(STAND_ALONE) + [0] * len(first_turns)
    assert fit.cut_offs(dict(enumerate(pairs)), turns, "sure") == pytest.approx((expected, None))


WRONG_WITH_A_WARNING = [(0.95, False)] * 2  # answers that never read "likely right"


@pytest.mark.parametrize(("noted", "expected"), [
    (False, 1.01),  # counted, the two wrong answers above every right one keep any cut-off from 90%
    (True, 0.9),  # left out, as the verdict leaves them out
])
def test_answers_with_a_warning_choose_no_cut_off(noted: bool, expected: float) -> None:
    pairs = WRONG_WITH_A_WARNING + STAND_ALONE
    marks = {i: noted and i < len(WRONG_WITH_A_WARNING) for i in range(len(pairs))}
    assert fit.cut_offs(dict(enumerate(pairs)), [None] * len(pairs), "sure", marks)[0] == pytest.approx(expected)


def test_a_question_collected_into_two_files_counts_once(tiny_db: Path, tmp_path: Path) -> None:
    databases = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    for db_id in databases:
        (tmp_path / "database" / db_id).mkdir(parents=True)
        shutil.copy(tiny_db, tmp_path / "database" / db_id / f"{db_id}.sqlite")
    lines = [record(i, databases[i % 6]) for i in range(36)]
    first = collected(tmp_path / "spider-train.jsonl.gz", lines)
    shuffled = collected(tmp_path / "spider-train-shuffled.jsonl.gz", lines[:6] + [record(36 + i, databases[i % 6])
                                                                                    for i in range(6)])
    out = tmp_path / "v.json"
    assert fit.main([str(first), str(shuffled), "--data-root", str(tmp_path), "--cut-offs-on", str(shuffled),
                     "--out", str(out)]) == 0
    found = Verifier.from_json(json.loads(out.read_text()))
    assert found.fitted_on["questions"] == 42  # 36 + 6 new, not 48
    # no follow-ups: their answers are cut as stand-alone ones (the early model's follow-ups written out, since
    # "one draft is enough" is not a cut-off for the words)
    assert set(found.cut_offs) == {"stand-alone early", "follow-up early"}
    assert found.sure_at(early=True, follow_up=True) == found.sure_at(early=True)
    assert found.sure_at(follow_up=True) == found.sure


@pytest.mark.parametrize(("answers", "expected"), [
    ([], None),
    ([(0.9, True, "a"), (0.8, True, "a")], None),  # every answer right: no AUC
    # a ranks perfectly, b backwards, c at chance; d has one kind only and is left out
    ([(0.9, True, "a"), (0.1, False, "a"), (0.1, True, "b"), (0.9, False, "b"), (0.5, True, "c"), (0.5, False, "c"),
      (0.7, False, "d")],
     {"databases": 3, "low": 0.25, "median": 0.5, "high": 0.75, "chance": 2}),
])  # fmt: skip
def test_the_auc_by_database_spreads_over_those_with_right_and_wrong_answers(answers: list, expected: dict | None
                                                                            ) -> None:
    assert fit.by_database(answers) == (None if expected is None else pytest.approx(expected))


def collected_question(early: tuple[float, bool] | None, *groups: tuple[float, bool]) -> tuple[dict, float | None,
                                                                                               list[float]]:
    """A question as :func:`fit.one_draft_enough` reads it: its first draft's (probability, right), where it has
    one, and its groups' (each passing)."""
    found = {"early": None if early is None else ({}, early[1]), "early_passed": True, "early_noted": False,
             "full": [({}, right) for _, right in groups], "passed": [True] * len(groups),
             "ranked": [(False, False, False)] * len(groups), "noted": [False] * len(groups)}
    return found, None if early is None else early[0], [p for p, _ in groups]


@pytest.mark.parametrize(("questions", "enough"), [
    # a first draft at 0.3 or more is as right as the choice among samples: the lowest cut-off is enough
    ([collected_question((0.3 + i / 100, True), (0.9, True)) for i in range(10)], 0.3),
    # first drafts below 0.6 are wrong where sampling finds the right group: settling there costs answers
    ([collected_question((0.3 + i / 20, i >= 6), (0.9, True), (0.1, False)) for i in range(13)], 0.6),
    # sampling never does better than the first draft, and no question has one: never settle early
    ([collected_question(None, (0.9, True))], 0.3),
    ([], 0.3),
])  # fmt: skip
def test_one_draft_is_enough_where_settling_costs_no_answer_that_sampling_gets(questions: list, enough: float) -> None:
    found, table = fit.one_draft_enough([q for q, _, _ in questions], [e for _, e, _ in questions],
                                        [f for _, _, f in questions])
    assert found == enough
    assert set(table) == set(fit.ENOUGH_CUTS)
