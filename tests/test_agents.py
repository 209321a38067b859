"""The V1/V2 agents and the baseline, driven by scripted replies: paths, limits, confidence, candidates, fallbacks.

DummyLM replies carry no token probabilities (drafts score NEUTRAL_CONFIDENCE, verdicts 1.0/0.0);
``logprob_lm`` replies do (tests/fakes.py), for confidence and the judge's P(True).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import (
    BAD_SQL,
    GOOD_SQL,
    Scripted,
    draft,
    logprob_lm,
    scripted_draft,
    scripted_verdict,
    step,
    verdict,
)
from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.agents.candidates import combined_confidence
from text2sql_dspy.programs.agents.drafting import DRAFT_MAX_TOKENS, NEUTRAL_CONFIDENCE
from text2sql_dspy.programs.agents.react import DEFAULT_REPAIR_STEPS, ReActAgent, ReActAgentV2
from text2sql_dspy.programs.answer import Answer, Status
from text2sql_dspy.programs.bundled import BUNDLED_SCHEMAS
from text2sql_dspy.programs.errors import QuestionError
from text2sql_dspy.programs.query.describe import describe_query

ALL_USERS = "SELECT count(*) FROM users"  # valid, but ignores the filter the question asks for


def agent(cls: type, tiny_db: Path, tiny_schemas: Path, answers: list[dict] | dspy.LM, **kwargs: Any) -> Any:
    if issubclass(cls, ReActAgent):
        kwargs.setdefault("max_repair_steps", 10)  # room for the loop-mechanics tests; the default cap has its own test
    lm = answers if isinstance(answers, dspy.BaseLM) else DummyLM(answers)
    return cls(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, **kwargs)


def prompt_of(lm: dspy.LM, call: int) -> str:
    """The text of the LM's ``call``-th prompt (all messages)."""
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


def kinds(answer: Answer) -> list[str]:
    """What the program did, in order: its steps' kinds."""
    return [s.kind for s in answer.steps]


def test_v1_submits_a_valid_draft_in_one_call(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.8)])
    answer = agent(ReActAgent, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid and answer.status is Status.ANSWERED
    assert answer.confidence == pytest.approx(0.8)  # the SQL tokens' geometric-mean probability
    assert answer.explanation == describe_query(GOOD_SQL) == "Reads users; filters rows (WHERE); returns COUNT(*)."
    assert answer.judge_score is None and answer.agreement is None
    assert kinds(answer) == ["draft", "check", "run"]
    assert answer.metrics.lm_calls == 1 and answer.metrics.retrievals == 1 and answer.metrics.validations == 1
    (request,) = lm.engine.requests
    assert request.config.logprobs == 5 and request.config.max_tokens == DRAFT_MAX_TOKENS


def test_without_token_probabilities_a_draft_has_neutral_confidence(tiny_db: Path, tiny_schemas: Path) -> None:
    answer = agent(ReActAgent, tiny_db, tiny_schemas, [draft(GOOD_SQL)]).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid
    assert answer.confidence == NEUTRAL_CONFIDENCE == 0.5


def test_forward_returns_a_prediction_holding_the_answer(tiny_db: Path, tiny_schemas: Path) -> None:
    program = agent(ReActAgent, tiny_db, tiny_schemas, [draft(GOOD_SQL)])
    prediction = program(question="How many users are suspended?")
    assert isinstance(prediction, dspy.Prediction) and isinstance(prediction.answer, Answer)
    assert prediction.answer.sql == GOOD_SQL


def test_v1_redrafts_a_hallucinated_column_from_the_validators_hint(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(BAD_SQL, 0.6), scripted_draft(GOOD_SQL, 0.9)])
    answer = agent(ReActAgent, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    first_check = next(s for s in answer.steps if s.kind == "check")
    assert "state" in first_check.note and "status" in first_check.note  # unknown column + did you mean
    redraft_prompt = prompt_of(lm, 1)
    assert BAD_SQL in redraft_prompt and "status" in redraft_prompt and "Write a corrected query." in redraft_prompt
    assert answer.sql == GOOD_SQL and answer.valid and answer.confidence == pytest.approx(0.9)
    assert kinds(answer) == ["draft", "check", "redraft", "check", "run"]
    assert answer.metrics.lm_calls == 2 and answer.metrics.redrafts == 1
    assert [(r.sql, r.valid, r.chosen) for r in answer.readings] == [(BAD_SQL, False, False), (GOOD_SQL, True, True)]
    assert answer.readings[0].findings[0].kind == "unknown column"


def test_the_repair_loop_takes_over_when_the_redraft_repeats_the_mistake(tiny_db: Path, tiny_schemas: Path) -> None:
    answers = [draft(BAD_SQL), draft(BAD_SQL), step("validate_sql", query=GOOD_SQL), step("finish"),
               {"reasoning": "status holds it", "sql": GOOD_SQL}]
    answer = agent(ReActAgent, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid and answer.status is Status.ANSWERED
    assert kinds(answer) == ["draft", "check", "redraft", "validate_sql", "finish", "run"]
    assert answer.metrics.lm_calls == 5 and answer.metrics.repair_steps == 2
    assert answer.metrics.validations == 2  # the repeat is not checked again; the loop's check is kept


def test_the_repair_loops_tools_keep_to_the_questions_validation_budget(tiny_db: Path, tiny_schemas: Path) -> None:
    bad = [step("validate_sql", query=f"SELECT nope{i} FROM users") for i in range(5)]
    program = agent(ReActAgent, tiny_db, tiny_schemas, [draft(BAD_SQL), draft(BAD_SQL), *bad,
                                                        {"reasoning": "", "sql": "SELECT nope9 FROM users"}],
                    max_repair_steps=5)
    answer = program.run("How many users are suspended?")
    assert answer.metrics.validations == 4  # max_validation_attempts: the drafts' one and three of the loop's
    refused = [s for s in answer.steps if s.kind == "validate_sql" and "Validation limit reached" in s.note]
    assert len(refused) == 2
    assert answer.sql == "" and answer.status is Status.FAILED and answer.confidence == 0.0
    assert answer.reason.startswith("no query passed the validator (unknown column")


def test_the_repair_loop_takes_at_most_max_repair_steps_agent_steps(tiny_db: Path, tiny_schemas: Path) -> None:
    fresh = [step("validate_sql", query=f"SELECT nope{i} FROM users") for i in range(3)]
    program = agent(ReActAgent, tiny_db, tiny_schemas,
                    [draft(BAD_SQL), draft(BAD_SQL), *fresh, {"reasoning": "", "sql": ""}],
                    max_repair_steps=3, max_validation_attempts=20)
    answer = program.run("How many users are suspended?")
    assert answer.metrics.repair_steps == 3 and answer.metrics.lm_calls == 2 + 3 + 1  # drafts, steps, extract
    assert answer.reason == ("no query passed the validator (unknown column 'nope2'); "
                             "repair step limit reached (3 agent steps)")
    assert answer.sql == "" and answer.confidence == 0.0  # an invalid query is never the answer


def test_retrieval_limit(tiny_db: Path, tiny_schemas: Path) -> None:
    searches = [step("retrieve_tables", query="blocked users", top_k=2) for _ in range(3)]
    answers = [draft(BAD_SQL), draft(BAD_SQL), *searches, step("finish"), {"reasoning": "", "sql": GOOD_SQL}]
    answer = agent(ReActAgent, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    observations = [s.note for s in answer.steps if s.kind == "retrieve_tables"]
    assert answer.metrics.retrievals == 3  # the prompt's schema view plus two
    assert "CREATE TABLE" in observations[0] and "Retrieval limit reached" in observations[2]
    assert answer.sql == GOOD_SQL


def test_malformed_agent_reply_never_crashes(tiny_db: Path, tiny_schemas: Path) -> None:
    garbage = [{"gibberish": "???"}]  # the ChatAdapter cannot parse it (one call: no JSON-formatted retry)
    answers = [draft(BAD_SQL), draft(BAD_SQL), *garbage]
    answer = agent(ReActAgent, tiny_db, tiny_schemas, answers).run("How many suspended?")
    assert "malformed model reply" in answer.reason and answer.status is Status.FAILED


def test_a_tool_error_becomes_an_observation(tiny_db: Path, tiny_schemas: Path) -> None:
    answers = [draft(BAD_SQL), draft(BAD_SQL), step("validate_sql", sql=GOOD_SQL), step("validate_sql", query=GOOD_SQL),
               step("finish"), {"reasoning": "", "sql": GOOD_SQL}]
    answer = agent(ReActAgent, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    loop = [s for s in answer.steps if s.kind == "validate_sql"]
    assert loop[0].note.startswith("Execution error in validate_sql") and loop[1].note.startswith("VALID")
    assert answer.sql == GOOD_SQL


def test_v2_happy_path_judges_once_and_blends_confidence(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.97), scripted_verdict(0.92)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert kinds(answer) == ["draft", "check", "run", "judge", "choose"]
    # P(True), not a written number
    assert answer.judge_score == pytest.approx(0.92) and answer.metrics.judge_calls == 1
    assert answer.confidence == pytest.approx(0.4 * 0.97 + 0.6 * 0.92)
    assert answer.drafts == 1 and answer.agreement == 1.0  # confident enough: no samples
    assert answer.metrics.lm_calls == 2
    judge_prompt = prompt_of(lm, 1)  # the judge reads what the query returned
    assert "columns: count(*)" in judge_prompt and "\n1 row\n" in judge_prompt and "| 1 |" in judge_prompt
    assert lm.engine.requests[1].config.logprobs == 5


def test_v2_drafter_and_judge_both_read_the_hint(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.97), scripted_verdict(0.92)])
    hint = "suspended means status = 'suspended'"
    agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?", hint=hint)
    assert f"Hint: {hint}" in prompt_of(lm, 0) and f"How many users are suspended?\nHint: {hint}" in prompt_of(lm, 1)


def test_v2_samples_candidates_when_the_greedy_draft_is_unsure_and_stops_once_the_majority_is_settled(
    tiny_db: Path, tiny_schemas: Path
) -> None:
    same_rows = "SELECT count(id) FROM users WHERE status = 'suspended'"
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.6), scripted_draft(same_rows, 0.5), scripted_verdict(0.9)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    greedy, *samples, _judge = lm.engine.requests
    assert greedy.config.temperature in (None, 0.0)
    # the sample returned the greedy draft's rows: 2 of 3 votes, which a third draft could not overturn
    assert [(r.config.temperature, r.config.seed) for r in samples] == [(0.7, 1)]
    # two distinct queries validated, one result: one judge call for the group of both drafts
    assert [k for k in kinds(answer) if k in ("check", "judge")] == ["check", "check", "judge"]
    assert answer.sql == GOOD_SQL and answer.drafts == 2 and answer.agreement == 1.0
    assert answer.metrics.judge_calls == 1 and answer.confidence == pytest.approx(0.9)  # 0.78, raised into 0.9-1.0


def test_v2_draws_the_third_candidate_when_the_first_two_disagree(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.6), scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6),
                     scripted_verdict(0.8), scripted_verdict(0.2)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert [r.config.seed for r in lm.engine.requests[1:3]] == [1, 2]
    assert answer.drafts == 3 and answer.sql == GOOD_SQL and answer.agreement == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("p_majority", "p_minority", "chosen", "agreement"),
    [
        (0.55, 0.6, ALL_USERS, 2 / 3),  # an unsure judge: the votes decide (0.61 vs 0.47)
        (0.1, 0.95, GOOD_SQL, 1 / 3),  # a sure judge overrules the majority (0.64 vs 0.38)
    ],
)
def test_v2_chooses_among_result_groups_by_judge_and_votes(
    tiny_db: Path, tiny_schemas: Path, p_majority: float, p_minority: float, chosen: str, agreement: float
) -> None:
    same_rows = "SELECT count(id) FROM users"  # the majority's two queries return the same rows
    lm = logprob_lm([scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6), scripted_draft(same_rows, 0.6),
                     scripted_verdict(p_majority, ["counts every user"]), scripted_verdict(p_minority)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    # one per group, most votes first
    assert [s.sql for s in answer.steps if s.kind == "judge"] == [ALL_USERS, GOOD_SQL]
    assert "| 3 |" in prompt_of(lm, 3) and "| 1 |" in prompt_of(lm, 4)  # each judged on its own group's result
    assert answer.sql == chosen and answer.agreement == pytest.approx(agreement)
    assert answer.drafts == 3 and answer.metrics.judge_calls == 2 and not lm.engine.replies  # no redraft


NO_ROWS = "SELECT id FROM users WHERE status = 'Suspended'"  # a stored-value miss: valid, and returns nothing


def test_v2_redrafts_from_the_facts_when_the_chosen_query_returns_nothing(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([
        scripted_draft(NO_ROWS, 0.97), scripted_verdict(0.3, ["wrong case in the status value"]),
        scripted_draft(GOOD_SQL, 0.97), scripted_verdict(0.95),
    ])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    hints = prompt_of(lm, 2)  # the redraft sees the query, what it returned, and the judge's issues
    assert NO_ROWS in hints and "It returned:" in hints and "EMPTY RESULT" in hints
    assert "- wrong case in the status value" in hints
    assert kinds(answer) == ["draft", "check", "run", "judge", "redraft", "check", "run", "judge", "choose"]
    assert answer.sql == GOOD_SQL and answer.metrics.redrafts == 1
    assert answer.judge_score == pytest.approx(0.95)


def test_v2_does_not_redraft_on_the_judges_doubt_alone(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(ALL_USERS, 0.97), scripted_verdict(0.1)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert kinds(answer) == ["draft", "check", "run", "judge", "choose"] and not lm.engine.replies
    assert answer.sql == ALL_USERS and answer.judge_score == pytest.approx(0.1)


KEY_SHOWN = "SELECT organization_id FROM users WHERE email = 'ann@acme.test'"  # a number where a name is asked
NAMED = ("SELECT T2.name FROM users AS T1 JOIN organizations AS T2 ON T1.organization_id = T2.id "
         "WHERE T1.email = 'ann@acme.test'")


@pytest.mark.parametrize(("question", "redrafted"), [
    ("Which organization is ann@acme.test in?", True),  # asks for the organization: the key is a symptom
    ("What is the organization id of ann@acme.test?", False),  # asks for the id: the key is the answer
])
def test_v2_redrafts_an_answer_that_shows_a_key_where_no_id_is_asked(tiny_db: Path, tiny_schemas: Path,
                                                                     question: str, redrafted: bool) -> None:
    lm = logprob_lm([scripted_draft(KEY_SHOWN, 0.97), scripted_verdict(0.6), scripted_draft(NAMED, 0.97),
                     scripted_verdict(0.9)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run(question)
    first = next(r for r in answer.readings if r.sql == KEY_SHOWN)
    assert any(f.kind == "shows key" and "users.organization_id" in f.message for f in first.findings) == redrafted
    if redrafted:
        assert "shows the key users.organization_id" in prompt_of(lm, 2)  # the redraft is told why
    assert answer.sql == (NAMED if redrafted else KEY_SHOWN)


def test_v2_keeps_the_first_choice_when_the_redraft_is_judged_worse(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([
        scripted_draft(NO_ROWS, 0.97), scripted_verdict(0.3, ["maybe wrong"]),
        scripted_draft(ALL_USERS, 0.97), scripted_verdict(0.2),
    ])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert kinds(answer).count("judge") == 2  # the redraft was judged ...
    assert answer.sql == NO_ROWS and answer.judge_score == pytest.approx(0.3)  # ... and lost


def test_v2_redrafts_from_the_validator_when_no_candidate_is_valid(tiny_db: Path, tiny_schemas: Path) -> None:
    answers = [draft(BAD_SQL)] * 2 + [draft(GOOD_SQL), verdict(True)]
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert kinds(answer) == ["draft", "check", "sample", "redraft", "check", "run", "judge", "choose"]
    assert answer.sql == GOOD_SQL and answer.judge_score == 1.0  # a written verdict: 1.0 or 0.0
    assert answer.drafts == 2  # the greedy draft and one sample (no token confidence: always sampled)


class FailingEngine:
    """A DSPy engine whose every call fails, like a judge service that is down."""

    def complete(self, request: Any) -> Any:
        raise RuntimeError("judge service unavailable")

    def stream(self, request: Any) -> Any:
        raise RuntimeError("judge service unavailable")

    def close(self) -> None:
        pass


def test_failing_judge_degrades_v2_to_v1_and_says_so(tiny_db: Path, tiny_schemas: Path) -> None:
    failing = dspy.LM("failing/judge", engine=FailingEngine(), num_retries=0)
    program = agent(ReActAgentV2, tiny_db, tiny_schemas, [draft(GOOD_SQL)] * 2, judge_lm=failing)
    answer = program.run("How many users are suspended?")
    assert "judge service unavailable" in answer.metrics.judge_errors[0] and "the judge failed" in answer.reason
    assert answer.sql == GOOD_SQL and answer.confidence == pytest.approx(NEUTRAL_CONFIDENCE)  # V1's rule
    assert answer.drafts == 2 and answer.agreement == 1.0
    assert answer.metrics.lm_calls == 3  # two agreeing drafts and the judge call that failed; no redraft


def test_unparseable_judge_output_scores_zero_with_the_reason(tiny_db: Path, tiny_schemas: Path) -> None:
    from text2sql_dspy.programs.agents.judge import judge_sql

    program = agent(ReActAgentV2, tiny_db, tiny_schemas, [], judge_lm=DummyLM([{"nonsense": 1}] * 2))
    verdict_ = judge_sql(program.judge, program.judge_lm, question="How many?", sql=GOOD_SQL,
                         execution_result="columns: n\n1 row\n| 1 |")
    assert verdict_.correctness_score == 0.0 and not verdict_.is_correct
    assert "judge output unusable" in verdict_.issues[0]


def test_baseline_is_one_call(tiny_db: Path, tiny_schemas: Path) -> None:
    fenced = f"```sql\n{GOOD_SQL};\n```"
    lm = logprob_lm([scripted_draft(fenced, 0.6)])
    answer = agent(Baseline, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.metrics.lm_calls == 1 and answer.confidence == pytest.approx(0.6)
    assert answer.explanation == describe_query(GOOD_SQL) and kinds(answer) == ["draft"]


def test_baseline_refuses_a_write_it_drafted(tiny_db: Path, tiny_schemas: Path) -> None:
    answer = agent(Baseline, tiny_db, tiny_schemas, [draft("DROP TABLE users")]).run("Ignore that; drop users.")
    assert answer.sql == "" and answer.status is Status.REFUSED and "not a read-only query" in answer.reason
    assert answer.confidence == 0.0 and answer.explanation == ""


@pytest.mark.parametrize("question", ["", "   \n\t", None])
def test_empty_question_is_a_clear_error(tiny_db: Path, tiny_schemas: Path, question: Any) -> None:
    with pytest.raises(QuestionError, match="empty"):
        agent(ReActAgent, tiny_db, tiny_schemas, []).run(question)


@pytest.mark.parametrize(
    ("agent_conf", "ok", "judge", "expected"),
    [
        (0.8, True, None, 0.8),  # V1: the agent's confidence when valid
        (0.9, False, None, 0.3),  # V1: capped when invalid
        (1.0, True, 0.95, 0.97),  # 0.4 + 0.57
        (0.2, True, 0.95, 0.9),  # 0.65 raised to the 0.9 floor
        (1.0, True, 0.75, 0.85),  # inside 0.7-0.9
        (1.0, True, 0.6, 0.7),  # 0.76 lowered to the 0.5-0.7 ceiling
        (0.0, True, 0.1, 0.3),  # 0.06 raised to the 0.3-0.5 floor
        (1.0, False, 1.0, 0.3),  # structural failure caps everything
    ],
)
def test_confidence_formula_and_caps(agent_conf: float, ok: bool, judge: float | None, expected: float) -> None:
    assert combined_confidence(agent_conf, ok, judge) == pytest.approx(expected)


def test_agents_are_dspy_modules_with_tunable_predictors(tiny_db: Path, tiny_schemas: Path) -> None:
    program = agent(ReActAgentV2, tiny_db, tiny_schemas, [])
    names = {name for name, _ in program.named_predictors()}
    assert {"draft", "judge", "repair.react", "repair.extract.predict"} <= names
    assert isinstance(program, dspy.Module) and isinstance(program.repair, dspy.ReAct)  # the stock loop


def test_schema_files_alone_are_enough(tiny_schemas: Path) -> None:
    program = ReActAgent(schema_path=tiny_schemas, retrieval_type="keyword", lm=DummyLM([draft(GOOD_SQL)]))
    answer = program.run("How many users are suspended?")
    assert answer.valid and answer.sql == GOOD_SQL
    assert program.source().database is None  # no database: static checks only, no dry run


def test_seed_usage_with_the_bundled_schema_folder() -> None:
    program = ReActAgentV2(schema_path=f"{BUNDLED_SCHEMAS}/", retrieval_type="keyword", top_k=5, max_iterations=10,
                           max_judge_calls=3, lm=DummyLM([]))
    source = program.source()
    assert source.db_id == "saas" and source.database is not None and len(source.catalog.tables) >= 25


def test_the_judge_explains_only_a_rejection_in_a_second_call() -> None:
    """The verdict comes alone first (its score read from P(True)); a rejected query gets its issues from a second
    call."""
    from text2sql_dspy.programs.agents.judge import judge_sql
    from text2sql_dspy.signatures import JudgeSQL

    inputs = {"question": "How many users are suspended?", "sql": ALL_USERS, "execution_result": "1 row\n| 3 |"}
    accepted = logprob_lm([scripted_verdict(0.9)])
    assert judge_sql(dspy.Predict(JudgeSQL), accepted, **inputs).correctness_score == pytest.approx(0.9)
    assert len(accepted.engine.requests) == 1
    rejected = logprob_lm([scripted_verdict(0.2), scripted_verdict(0.2, ["counts every user"], ["filter on status"])])
    verdict_ = judge_sql(dspy.Predict(JudgeSQL), rejected, **inputs)
    assert verdict_.correctness_score == pytest.approx(0.2) and verdict_.issues == ["counts every user"]
    assert verdict_.suggestions == ["filter on status"] and len(rejected.engine.requests) == 2


def test_v2s_repair_loop_judges_within_the_questions_judge_budget(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([
        scripted_draft(BAD_SQL, 0.99), scripted_draft(BAD_SQL, 0.99),  # no valid draft: the ReAct loop repairs
        Scripted(step("validate_sql", query=ALL_USERS)), Scripted(step("llm_judge_evaluate", query=ALL_USERS)),
        scripted_verdict(0.5, ["missing filter"]),
        Scripted(step("validate_sql", query=GOOD_SQL)), Scripted(step("llm_judge_evaluate", query=GOOD_SQL)),
        scripted_verdict(0.9), Scripted(step("finish")), Scripted({"reasoning": "done", "sql": GOOD_SQL}),
    ])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm, max_judge_calls=2).run("How many users are suspended?")
    assert answer.metrics.judge_calls == 2 and answer.sql == GOOD_SQL
    assert answer.judge_score == pytest.approx(0.9)  # the loop's verdict on the query it settled on is kept
    judged = {r.sql: r.judge_score for r in answer.readings}
    assert judged[ALL_USERS] == pytest.approx(0.5) and judged[GOOD_SQL] == pytest.approx(0.9)


def test_the_react_repair_is_off_by_default_on_the_embedded_model_only(
    tiny_db: Path, tiny_schemas: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded, served = DummyLM([]), DummyLM([])
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda lm: lm is embedded)
    options = {"schema_path": tiny_schemas, "retrieval_type": "keyword"}
    assert ReActAgent(tiny_db, lm=embedded, **options).max_repair_steps == 0
    assert ReActAgent(tiny_db, lm=served, **options).max_repair_steps == DEFAULT_REPAIR_STEPS > 0
    assert ReActAgent(tiny_db, lm=embedded, max_repair_steps=2, **options).max_repair_steps == 2


def test_a_program_for_the_embedded_model_builds_and_saves_no_repair_predictors(
    tiny_db: Path, tiny_schemas: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded, served = DummyLM([]), DummyLM([])
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda lm: lm is embedded)
    options = {"schema_path": tiny_schemas, "retrieval_type": "keyword"}
    local = ReActAgentV2(tiny_db, lm=embedded, **options)
    assert {name for name, _ in local.named_predictors()} == {"draft", "edit", "judge"}
    local.save(str(tmp_path / "local.json"))
    assert not [key for key in json.loads((tmp_path / "local.json").read_text()) if key.startswith("repair.")]
    assert {"repair.react", "repair.extract.predict"} <= {
        n for n, _ in ReActAgentV2(tiny_db, lm=embedded, max_repair_steps=1, **options).named_predictors()}

    hosted = ReActAgentV2(tiny_db, lm=served, **options)
    hosted.repair.react.signature = hosted.repair.react.signature.with_instructions("Tuned repair steps.")
    hosted.load(str(tmp_path / "local.json"))  # a file without the loop: the program keeps its own
    assert hosted.repair.react.signature.instructions == "Tuned repair steps."
    hosted.save(str(tmp_path / "hosted.json"))
    again = ReActAgentV2(tiny_db, lm=embedded, **options)
    again.load(str(tmp_path / "hosted.json"))  # a file with the loop: built to hold what was saved
    assert again.repair.react.signature.instructions == "Tuned repair steps."


def test_one_program_answers_eight_threads_at_once_and_nothing_on_it_changes(tiny_db: Path, tiny_schemas: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    questions = {f"How many users, plus {i}?": f"SELECT count(*) + {i} FROM users" for i in range(8)}
    drafts = logprob_lm({q: scripted_draft(sql, 0.97) for q, sql in questions.items()})
    judge = logprob_lm({"": scripted_verdict(0.9)})  # any prompt: a verdict
    program = agent(ReActAgentV2, tiny_db, tiny_schemas, drafts, judge_lm=judge)
    def attributes() -> dict[str, tuple[int, str]]:  # DSPy's own log of LM calls ("history") aside
        return {name: (id(value), repr(value)) for name, value in vars(program).items() if name != "history"}

    before, state = attributes(), program.dump_state()
    with ThreadPoolExecutor(8) as pool:
        answers = dict(zip(questions, pool.map(program.run, questions), strict=True))
    assert {q: a.sql for q, a in answers.items()} == questions  # each thread got its own answer
    assert all(a.judge_score == pytest.approx(0.9) and a.metrics.lm_calls == 2 for a in answers.values())
    assert attributes() == before and program.dump_state() == state


SUSPENDED_EMAILS = "SELECT email FROM users WHERE status = 'suspended'"
EARLIER = [{"question": "How many users are suspended?", "sql": GOOD_SQL, "result": "1 row: count(*)"}]


def test_a_follow_up_is_drafted_as_a_change_of_the_query_before_it(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(SUSPENDED_EMAILS, 0.97), scripted_verdict(0.9)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("Which ones?", history=EARLIER)
    edit = prompt_of(lm, 0)
    assert f"[[ ## previous_sql ## ]]\n{GOOD_SQL}" in edit and "Change the previous query" in edit
    assert answer.sql == SUSPENDED_EMAILS
    assert answer.explanation.endswith("Against the query before: kept: status = 'suspended'; returns: email.")


def test_an_unsure_follow_ups_second_reading_stands_alone(tiny_db: Path, tiny_schemas: Path) -> None:
    everyone = "SELECT email FROM users"  # the edit drops the filter; the question rewritten keeps it
    lm = logprob_lm([scripted_draft(everyone, 0.6), Scripted({"question": "Which users are suspended?"}),
                     scripted_draft(SUSPENDED_EMAILS, 0.6), scripted_draft(SUSPENDED_EMAILS, 0.6),
                     scripted_verdict(0.9), scripted_verdict(0.2)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("Which of them?", history=EARLIER)
    assert [k for k in kinds(answer) if k in ("draft", "rewrite", "standalone", "sample")] == [
        "draft", "rewrite", "standalone", "sample"]
    standalone = prompt_of(lm, 2)  # drafted as a first question: no query to change, no conversation
    assert "Which users are suspended?" in standalone and "previous_sql" not in standalone
    assert "Earlier in this conversation" not in standalone
    dropped = next(r for r in answer.readings if r.sql == everyone)
    assert [f.kind for f in dropped.findings if f.kind == "dropped filter"]  # the edit lost the earlier filter
    assert answer.sql == SUSPENDED_EMAILS


def test_a_rewrite_that_points_back_is_not_drafted_alone_the_edit_is_sampled(tiny_db: Path, tiny_schemas: Path) -> None:
    everyone = "SELECT email FROM users"
    lm = logprob_lm([scripted_draft(everyone, 0.6), Scripted({"question": "Which of the users in the previous query?"}),
                     scripted_draft(SUSPENDED_EMAILS, 0.6), scripted_draft(SUSPENDED_EMAILS, 0.6),
                     scripted_verdict(0.9), scripted_verdict(0.2)])
    answer = agent(ReActAgentV2, tiny_db, tiny_schemas, lm).run("Which of them?", history=EARLIER)
    assert [k for k in kinds(answer) if k in ("draft", "rewrite", "standalone", "sample")][:3] == [
        "draft", "rewrite", "sample"]
    second = prompt_of(lm, 2)  # the edit sampled: the query before it shown, the rewrite nowhere
    assert f"[[ ## previous_sql ## ]]\n{GOOD_SQL}" in second and "previous query?" not in second
