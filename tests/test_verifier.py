"""The verifier: shipped in the package and read with no network and no fitting; V2 spending its calls by it (one
draft and no judge when sure, more drafts when not); its verdict in words on the answer."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import (
    BAD_SQL,
    GOOD_SQL,
    RecordedLM,
    draft,
    logprob_lm,
    scripted_draft,
    scripted_verdict,
    step,
    verdict,
)
from text2sql_dspy.programs.agents.drafting import LOOP_ERROR
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.agents.verifier import (
    ASKED,
    EARLY,
    FLAGGED,
    FOLLOW_UP,
    FULL,
    GENERATED,
    Model,
    Verifier,
    features,
    load_verifier,
)
from text2sql_dspy.programs.answer import Preview, Reading
from text2sql_dspy.programs.query.findings import Finding, Kind

ALL_USERS = "SELECT count(*) FROM users"


def constant(names: tuple[str, ...], p: float, **weights: float) -> Model:
    """A model that says ``p``, moved by ``weights`` on raw (unscaled) features."""
    return Model(names, tuple(weights.get(n, 0.0) for n in names), math.log(p / (1 - p)), (0.0,) * len(names),
                 (1.0,) * len(names))


def verifier(early: float, full: float = 0.5, *, judge_helps: bool = False, **weights: float) -> Verifier:
    return Verifier(constant(EARLY, early), constant(FULL, full, **weights), sure=0.8, doubtful=0.3,
                    judge_helps=judge_helps, fitted_on={"sets": ["test"]}, early_sure=0.9)


@pytest.fixture(autouse=True)
def embedded_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted LMs stand for the embedded model, whose judge V2 asks only where it adds to the verifier."""
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda lm: True)


def program(tiny_db: Path, tiny_schemas: Path, lm: object, found: Verifier) -> ReActAgentV2:
    return ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, verifier=found,
                        max_repair_steps=0)


def test_a_sure_answer_takes_one_draft_and_no_judge_call(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.6)])  # unsure by its tokens alone: without a verifier V2 samples
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.95)).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.drafts == 1 and answer.metrics.lm_calls == 1
    assert answer.metrics.judge_calls == 0 and not lm.engine.replies
    assert answer.confidence == pytest.approx(0.95) and answer.verdict == "likely right"
    assert answer.confidence_line.startswith("likely right (0.95; estimated from public benchmarks")


def test_an_unsure_first_draft_draws_more_and_the_verifier_chooses(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6), scripted_draft(GOOD_SQL, 0.6)])
    found = verifier(early=0.5, full=0.5, **{"rows": -3.0})  # fewer rows, likelier right: the filtered count
    answer = program(tiny_db, tiny_schemas, lm, found).run("How many users are suspended?")
    assert answer.drafts == 3 and answer.sql == GOOD_SQL and answer.metrics.judge_calls == 0  # the judge adds nothing
    assert answer.confidence == pytest.approx(found.full.probability(features(answer.chosen, answer.question,
                                                                              drafts=3, groups=2)))


def test_the_judge_is_asked_where_it_adds_to_the_verifier(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6), scripted_draft(GOOD_SQL, 0.6),
                     scripted_verdict(0.95), scripted_verdict(0.1)])  # the group of two drafts is judged first
    found = verifier(early=0.5, full=0.5, judge_helps=True, judge=2.0)
    answer = program(tiny_db, tiny_schemas, lm, found).run("How many users are suspended?")
    assert answer.metrics.judge_calls == 2 and answer.sql == GOOD_SQL and answer.judge_score == pytest.approx(0.95)


def test_a_doubtful_answer_says_likely_wrong_and_why(tiny_db: Path, tiny_schemas: Path) -> None:
    limited = "SELECT email FROM users LIMIT 1"  # drafted, sampled and redrafted alike: the redraft is no new query
    lm = logprob_lm([scripted_draft(limited, 0.95)] * 3)
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.2, full=0.1)).run("List the emails of all users.")
    assert answer.verdict == "likely wrong" and answer.confidence == pytest.approx(0.1)
    assert [f.kind for f in answer.noted] == [Kind.LIMIT_WITHOUT_ORDER, Kind.UNASKED_LIMIT]
    redraft = prompt_text(lm, 2)  # doubtful, with a lint: one redraft, told the lint's finding
    assert "LIMIT 1 keeps only some of the rows" in redraft and answer.metrics.redrafts == 1


def test_a_sure_answer_with_a_finding_reads_check_this(tiny_db: Path, tiny_schemas: Path) -> None:
    limited = "SELECT email FROM users LIMIT 1"
    lm = logprob_lm([scripted_draft(limited, 0.95)])
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.95)).run("List the emails of all users.")
    assert answer.drafts == 1 and answer.confidence == pytest.approx(0.95)  # the early model is sure: one draft
    assert answer.noted and answer.verdict == "check this"  # but a warning the user should read is no "likely right"


def prompt_text(lm: object, call: int) -> str:
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


@pytest.mark.parametrize(("question", "rows", "columns", "feature"), [
    ("How many users are there?", [[3]], ["n"], "count_asked_one_number"),
    ("How many users are there?", [["a"], ["b"]], ["email"], "count_asked_not_one_number"),
    ("List all users.", [["a"]], ["email"], "list_asked_one_row"),
    ("Show the email and name of users.", [["a"], ["b"]], ["email"], "columns_asked_short"),
    ("Which users?", [["a"], ["a"]], ["email"], "repeated_rows"),
    ("Which users?", [[None]], ["email"], "null_only"),
    ("Which users?", [], ["email"], "empty"),
])
def test_the_shape_of_a_result_against_its_question(question: str, rows: list, columns: list, feature: str) -> None:
    reading = Reading(sql="SELECT 1", valid=True, preview=Preview(columns=columns, rows=rows, row_count=len(rows)))
    assert features(reading, question)[feature] == 1.0


def test_a_lint_is_a_feature() -> None:
    lint = Finding(kind=Kind.UNUSED_JOIN, message="joins blocks but reads none of its columns")
    reading = Reading(sql="SELECT 1", valid=True, findings=[lint], preview=Preview(columns=["a"], rows=[[1]]))
    found = features(reading, "Which users?")
    assert found["lint: unused join"] == 1.0 and found["lints"] == 1.0 and found["lint: fan-out"] == 0.0


@pytest.mark.shipped_verifier
def test_the_shipped_verifier_loads_from_the_package_with_no_network_and_no_fitting() -> None:
    shipped = load_verifier()
    assert shipped is not None and 0 < shipped.doubtful < shipped.sure <= 1.01 and shipped.fitted_on  # 1.01: never
    known = {*ASKED, *FOLLOW_UP, *GENERATED}
    assert set(shipped.early.names) <= {*EARLY, *known} and set(shipped.full.names) <= {*FULL, *known}
    code = ("import sys, socket\n"
            "def refuse(*a, **k): raise OSError('no network in this test')\n"
            "socket.socket.connect = refuse\n"
            "from text2sql_dspy.programs.agents.verifier import load_verifier\n"
            "from text2sql_dspy.programs.answer import Reading, Preview\n"
            "v = load_verifier()\n"
            "p = v.probability(Reading(sql='SELECT 1', valid=True, preview=Preview(columns=['n'], rows=[[1]], "
            "row_count=1)), 'How many?')\n"
            "print(round(p, 6), 'sklearn' in sys.modules, 'dspy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert 0.0 < float(out[0]) < 1.0 and out[1:] == ["False", "False"]  # no scikit-learn, no DSPy: nothing fitted


def test_a_verifier_survives_its_json() -> None:
    found = verifier(early=0.7, full=0.4, rows=1.5)
    written = Verifier.from_json(json.loads(json.dumps(found.to_json())))
    assert Verifier.from_json(written.to_json()) == written  # written once, it reads back as it is
    reading = Reading(sql="SELECT 1", valid=True, preview=Preview(columns=["n"], rows=[[1]], row_count=1))
    assert written.probability(reading, "How many?") == pytest.approx(found.probability(reading, "How many?"), abs=1e-9)


def test_a_refit_that_differs_in_the_last_bits_writes_the_same_file() -> None:
    found = verifier(early=0.7, full=0.4, rows=1.5)
    nudged = replace(found, sure=found.sure * (1 + 1e-15), full=replace(found.full, intercept=found.full.intercept
                                                                          * (1 + 1e-15)))
    assert nudged != found and json.dumps(nudged.to_json()) == json.dumps(found.to_json())
    assert found.words(0.85) == "likely right" and found.words(0.5) == "check this"
    assert found.words(0.1) == "likely wrong"
    assert found.words(0.85, noted=True) == "check this" and found.words(0.1, noted=True) == "likely wrong"
    assert found.words(0.85, early=True) == "check this" and found.words(0.95, early=True) == "likely right"


EMPTY = "SELECT email FROM users WHERE last_login_at > '2030-01-01'"  # valid, and returns nothing
SINCE_2024 = "SELECT email FROM users WHERE last_login_at > '2024-01-01'"
CROSSED = "SELECT u.email FROM users u JOIN blocks b ON u.id = u.id"  # always true: every user once per block
BLOCKED_USERS = "SELECT u.email FROM users u JOIN blocks b ON b.user_id = u.id"


def test_a_chosen_answer_that_returns_nothing_is_redrafted_however_sure(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(EMPTY, 0.95), scripted_draft(EMPTY, 0.95), scripted_draft(SINCE_2024, 0.9)])
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.99, full=0.99)).run("Who logged in since 2024?")
    assert answer.metrics.redrafts == 1 and answer.sql == SINCE_2024  # an empty result is no "sure" answer
    assert "EMPTY RESULT" in prompt_text(lm, 2)  # the redraft was told what the chosen query returned


SHOWS_ORG_KEY = "SELECT organization_id FROM users WHERE email = 'ann@acme.test'"  # a number where a name is asked
NAMES_ORG = ("SELECT T2.name FROM users AS T1 JOIN organizations AS T2 ON T1.organization_id = T2.id "
             "WHERE T1.email = 'ann@acme.test'")


@pytest.mark.parametrize(("question", "chosen", "redrafts"), [
    ("Which organization is ann@acme.test in?", NAMES_ORG, 1),  # the key is a symptom: redrafted, the clean one wins
    ("What is the organization id of ann@acme.test?", SHOWS_ORG_KEY, 0),  # the id is asked: the key is the answer
])
def test_a_chosen_answer_that_shows_a_key_is_redrafted_however_sure(tiny_db: Path, tiny_schemas: Path, question: str,
                                                                    chosen: str, redrafts: int) -> None:
    lm = logprob_lm([scripted_draft(SHOWS_ORG_KEY, 0.95), scripted_draft(NAMES_ORG, 0.9)])
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.99, full=0.99)).run(question)
    assert answer.sql == chosen and answer.metrics.redrafts == redrafts
    if redrafts:
        assert "shows the key users.organization_id" in prompt_text(lm, 1)  # the redraft is told why


def test_a_reading_with_a_blocking_finding_never_beats_a_clean_one(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(CROSSED, 0.6), scripted_draft(BLOCKED_USERS, 0.6), scripted_draft(CROSSED, 0.6)])
    found = verifier(early=0.5, full=0.5, rows=3.0, agreement=3.0)  # more rows and more votes: the cross join's
    answer = program(tiny_db, tiny_schemas, lm, found).run("Which users were blocked?")
    crossed = next(r for r in answer.readings if r.sql == CROSSED)
    assert crossed.votes == 2 and [f.kind for f in crossed.findings] == [Kind.ALWAYS_TRUE_JOIN]
    assert answer.sql == BLOCKED_USERS and answer.metrics.redrafts == 0


@pytest.mark.parametrize(("name", "weight", "held"), [
    ("lint: missing value", 0.8, 0.0),  # a literal the column does not hold may not raise P(right)
    ("lint: unused join", -0.4, -0.4),  # lowering it is what it means
    ("empty", 0.5, 0.0),
    ("confidence", 0.7, 0.7),  # a signal that means "right" keeps its sign
    ("list_asked_one_row", 0.5, 0.0),
])
def test_a_signal_that_means_wrong_never_raises_p_right(name: str, weight: float, held: float) -> None:
    model = constant(EARLY, 0.5, **{name: weight})
    data = {"early": model.to_json(), "full": constant(FULL, 0.5, **{name: weight}).to_json(), "sure": 0.9,
            "doubtful": 0.3, "judge_helps": False, "fitted_on": "test"}
    loaded = Verifier.from_json(data)
    assert dict(zip(loaded.early.names, loaded.early.coefficients))[name] == held
    assert dict(zip(loaded.full.names, loaded.full.coefficients))[name] == held


RUNAWAY = "SELECT email FROM users WHERE id IN (" + "0, " * 30 + "0)"  # a loop: the draft is cut, no query


def test_a_first_draft_that_gave_no_query_is_sampled_past(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(RUNAWAY, 0.95), scripted_draft(GOOD_SQL, 0.9)])
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.95, full=0.9)).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.drafts == 2
    assert answer.steps[0].note == LOOP_ERROR  # the loop was seen, and the next draft was drawn


NAMED = "SELECT count(*) FROM users WHERE status = 'active' AND full_name = 'Ann Lee'"  # nobody asked for Ann Lee


def test_a_reading_less_its_unasked_filter_is_offered_and_can_win(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(NAMED, 0.9)] * 5)
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.5, full=0.5, lints=-3.0)).run(
        "How many users are active?")
    assert answer.sql == "SELECT COUNT(*) FROM users WHERE status = 'active'"  # as sqlglot writes it
    assert [s.kind for s in answer.steps].count("loosen") == 1 and answer.metrics.redrafts == 0


UNGROUPED = "SELECT full_name FROM users ORDER BY COUNT(*) DESC LIMIT 1"  # no group: no draft validates


def test_one_table_ranked_with_no_group_is_answered_by_a_join_that_gives_it_rows(tiny_db: Path,
                                                                                 tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(UNGROUPED, 0.9)] * 5)
    answer = program(tiny_db, tiny_schemas, lm, verifier(early=0.5, full=0.95)).run(
        "Which user has the most login attempts?")
    regrouped = [s.sql for s in answer.steps if s.kind == "regroup"]
    assert regrouped == [answer.sql] and answer.metrics.redrafts == 0  # one reading, no model call to mend it
    assert answer.chosen.votes == 1 and Kind.REGROUPED in {f.kind for f in answer.chosen.findings}
    # a guess is never "likely right"
    assert answer.confidence == pytest.approx(0.95) and answer.verdict == "check this"
    assert answer.sql == ("SELECT users.full_name FROM users JOIN login_attempts ON login_attempts.user_id = users.id "
                          "GROUP BY users.id ORDER BY COUNT(*) DESC LIMIT 1")  # the table the question names


REPAIRED = [  # no draft validates; the repair loop validates GOOD_SQL, finishes, and its last word is ``last``
    step("validate_sql", query=GOOD_SQL), step("finish")]


@pytest.mark.parametrize(("last", "full", "words", "confidence"), [
    ({"reasoning": "status holds it", "sql": GOOD_SQL}, 0.95, "likely right", 0.95),  # submitted: as any answer
    ({"reasoning": "status holds it", "sql": GOOD_SQL}, 0.1, "likely wrong", 0.1),
    ("[[ ## sq", 0.95, "check this", 0.3),  # unreadable last word: best effort, capped, never "likely right"
    ("[[ ## sq", 0.1, "likely wrong", 0.1),
])
def test_the_repair_loops_answer_is_worded_by_the_verifier(
    tiny_db: Path, tiny_schemas: Path, last: object, full: float, words: str, confidence: float
) -> None:
    lm = RecordedLM([draft(BAD_SQL)] * 3 + REPAIRED + [last])
    answer = ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm,
                          verifier=verifier(early=0.2, full=full), max_repair_steps=10,
                          judge_lm=DummyLM([verdict(True)] * 4)).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.metrics.repair_steps == 2
    assert answer.verdict == words and answer.confidence == pytest.approx(confidence)
    assert answer.confidence_line.startswith(words)


FOLLOWING = replace(verifier(early=0.7, full=0.4), cut_offs={"follow-up": 0.95, "follow-up early": 1.01})


@pytest.mark.parametrize(("found", "p", "early", "follow_up", "words"), [  # sure 0.8, early 0.9 for a stand-alone
    (FOLLOWING, 0.85, False, False, "likely right"),
    (FOLLOWING, 0.85, False, True, "check this"),  # a follow-up's own cut-off, 0.95
    (FOLLOWING, 0.96, False, True, "likely right"),
    (FOLLOWING, 0.99, True, True, "check this"),  # no early cut-off for follow-ups: never sure on one draft
    (FOLLOWING, 0.95, True, False, "likely right"),
    (replace(FOLLOWING, cut_offs={"stand-alone early": 0.97}), 0.95, True, False, "check this"),  # one draft is
    # enough at the early_sure of 0.9, but its verdict has a cut-off of its own
    (verifier(early=0.7, full=0.4), 0.85, False, True, "likely right"),  # none of its own: as a stand-alone's
    (FOLLOWING, 0.1, False, True, "likely wrong"),
])
def test_a_follow_up_is_worded_by_its_own_cut_off(found: Verifier, p: float, early: bool, follow_up: bool,
                                                   words: str) -> None:
    assert found.words(p, early=early, follow_up=follow_up) == words


def test_a_verifiers_follow_up_cut_offs_survive_its_json_and_an_older_file_has_none() -> None:
    written = Verifier.from_json(json.loads(json.dumps(FOLLOWING.to_json())))
    assert Verifier.from_json(written.to_json()) == written
    assert written.cut_offs == {"follow-up": 0.95, "follow-up early": 1.01}
    older = {k: v for k, v in FOLLOWING.to_json().items() if k != "cut_offs"}
    assert Verifier.from_json(older).sure_at(early=True, follow_up=True) == 0.9  # the stand-alone early cut-off


def test_a_follow_up_answered_on_its_first_draft_is_worded_by_the_follow_up_cut_off(tiny_db: Path,
                                                                                     tiny_schemas: Path) -> None:
    from text2sql_dspy.programs.conversation import History, Turn

    found = replace(verifier(early=0.95), cut_offs={"follow-up": 0.99, "follow-up early": 1.01})
    history = History.of([Turn(question="How many users are there?", sql=ALL_USERS)])
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)])
    answer = program(tiny_db, tiny_schemas, lm, found).run("Of them, how many are suspended?", history=history)
    assert answer.drafts == 1 and answer.confidence == pytest.approx(0.95)  # sampling decided as for any question
    assert answer.verdict == "check this"  # but no early cut-off for follow-ups: never "likely right" on one draft
    alone = program(tiny_db, tiny_schemas, logprob_lm([scripted_draft(GOOD_SQL, 0.9)]), found)
    assert alone.run("How many users are suspended?").verdict == "likely right"  # a stand-alone question's 0.9


@pytest.mark.shipped_verifier
def test_the_shipped_verifier_weighs_todays_lints_refit_when_they_change() -> None:
    """A lint added or removed since the shipped fit fails here until the verifier is refitted
    (optimize/fit_verifier.py, then optimize/ensemble_fit.py: benchmarks/results/generators-2026-12-07/NOTES.md)."""
    shipped = load_verifier()
    lints = {f"lint: {kind}" for kind in FLAGGED}
    for model in (shipped.early, shipped.full):
        assert {n for n in model.names if n.startswith("lint: ")} == lints
