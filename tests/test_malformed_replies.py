"""Malformed model replies (recorded raw text through DummyLM) and failing judges never crash V1, V2 or
the evaluation's answer_one: each ends in an answer, an observation the agent can act on, or a recorded reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import BAD_SQL, GOOD_SQL, RecordedLM, draft, step, verdict
from text2sql_dspy.optimize import evaluation
from text2sql_dspy.optimize.provenance import code_identity
from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.agents.drafting import NEUTRAL_CONFIDENCE, draft_sql
from text2sql_dspy.programs.agents.react import ReActAgent, ReActAgentV2
from text2sql_dspy.signatures import DraftSQL

ALL_USERS = "SELECT count(*) FROM users"


# Replies no adapter can read as a draft (one ChatAdapter call each: there is no JSON-formatted retry).
MALFORMED_DRAFTS = {
    "empty": "",
    "whitespace": "  \n\t ",
    "truncated_marker": "[[ ## sq",
    "no_sql_field": "[[ ## explanation ## ]]\nCounts users.\n\n[[ ## completed ## ]]",
    "no_sql_key_json": '{"query": "SELECT count(*) FROM users"}',
    "binary_garbage": "\x00\x01\x02\ufffd\ufffd PK\x03\x04",
}
# Damaged replies a draft survives, now that the SQL is its only field: the adapters salvage the SQL,
# and the validator judges it like any draft.
SALVAGED_DRAFTS = {
    "truncated_fields": ("[[ ## sql ## ]]\nSELECT count(*) FROM us", "SELECT count(*) FROM us"),
    "truncated_json": ('{"sql": "SELECT count(*) FROM users", "explanation": "cou', ALL_USERS),
    "invalid_json": ("{sql: SELECT count(*) FROM users, confidence: high}", ALL_USERS),
    "wrong_types_json": ('{"sql": ["SELECT", 1], "explanation": {"a": 1}}', "['SELECT', 1]"),
}
# Agent steps no adapter can read: all of the above, an unknown tool, arguments that are no JSON object.
MALFORMED_STEPS = {
    **MALFORMED_DRAFTS,
    **{name: reply for name, (reply, _) in SALVAGED_DRAFTS.items()},
    "unknown_tool": {"next_thought": "x", "next_tool_name": "drop_database", "next_tool_args": {}},
    "args_a_string": {"next_thought": "x", "next_tool_name": "validate_sql", "next_tool_args": GOOD_SQL},
    "args_a_list": {"next_thought": "x", "next_tool_name": "validate_sql", "next_tool_args": [GOOD_SQL]},
}
# Readable steps whose arguments a tool cannot take: they become observations and the agent goes on.
BAD_ARGUMENTS = {
    "query_a_list": step("validate_sql", query=["SELECT", 1]),
    "query_null": step("validate_sql", query=None),
    "query_an_object": step("validate_sql", query={"sql": GOOD_SQL}),
    "missing_argument": step("validate_sql"),
    "unknown_argument": step("validate_sql", sql=GOOD_SQL),
    "top_k_a_word": step("retrieve_tables", query="users", top_k="many"),
}
EXTRACT = {"reasoning": "status holds it", "sql": GOOD_SQL}  # the loop's last word: the query it settled on
PROGRAMS = {"v1": ReActAgent, "v2": ReActAgentV2}


def build(kind: str, tiny_db: Path, tiny_schemas: Path, answers: list, judge: list | None = None) -> Any:
    options: dict[str, Any] = {"judge_lm": DummyLM(judge or [verdict(True)] * 4)} if kind == "v2" else {}
    if kind in ("v1", "v2"):
        options["max_repair_steps"] = 10  # room for the loop's malformed steps
    cls = PROGRAMS.get(kind, Baseline)
    return cls(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=RecordedLM(answers), **options)


def failed_opening(kind: str, sql: str = BAD_SQL) -> list[dict[str, Any]]:
    """The draft replies an opening consumes when every draft writes the same invalid ``sql``: V1 drafts and
    redrafts; V2 (no token confidence, so it samples) drafts twice (the two agree, so a third draft could not
    change the majority), then redrafts."""
    return [draft(sql)] * (3 if kind == "v2" else 2)


@pytest.mark.parametrize("reply", [reply for reply, _ in SALVAGED_DRAFTS.values()], ids=SALVAGED_DRAFTS.keys())
def test_a_damaged_reply_still_yields_its_sql(reply: str) -> None:
    expected = next(sql for text, sql in SALVAGED_DRAFTS.values() if text == reply)
    result = draft_sql(dspy.Predict(DraftSQL), RecordedLM([reply, reply]), question="How many?", table_schemas="")
    assert result.sql == expected and result.error is None


@pytest.mark.parametrize("reply", MALFORMED_DRAFTS.values(), ids=MALFORMED_DRAFTS.keys())
def test_an_unreadable_draft_is_an_error_not_an_exception(reply: str) -> None:
    result = draft_sql(dspy.Predict(DraftSQL), RecordedLM([reply, reply]), question="How many?", table_schemas="")
    assert result.sql == "" and result.confidence == 0.0 and "malformed model reply" in result.error


@pytest.mark.parametrize("reply", MALFORMED_DRAFTS.values(), ids=MALFORMED_DRAFTS.keys())
def test_unreadable_draft_lets_the_agent_write_the_query_itself(tiny_db: Path, tiny_schemas: Path, reply: Any) -> None:
    answers = [reply, step("validate_sql", query=GOOD_SQL), step("finish"), EXTRACT]  # one call: no JSON retry
    answer = build("v1", tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid
    assert [s.kind for s in answer.steps][:3] == ["draft", "validate_sql", "finish"]  # no second draft: the loop


@pytest.mark.parametrize("reply", MALFORMED_DRAFTS.values(), ids=MALFORMED_DRAFTS.keys())
def test_v2_samples_past_an_unreadable_first_draft(tiny_db: Path, tiny_schemas: Path, reply: Any) -> None:
    answers = [reply, draft(GOOD_SQL), draft(GOOD_SQL)]  # the two samples agree: a third could not change that
    answer = build("v2", tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid and answer.metrics.repair_steps == 0
    assert [s.kind for s in answer.steps][:2] == ["draft", "sample"]


@pytest.mark.parametrize("kind", PROGRAMS)
@pytest.mark.parametrize("reply", MALFORMED_STEPS.values(), ids=MALFORMED_STEPS.keys())
def test_unreadable_step_ends_the_loop_and_its_last_word_is_checked(
    tiny_db: Path, tiny_schemas: Path, kind: str, reply: Any
) -> None:
    answers = [*failed_opening(kind), step("validate_sql", query=GOOD_SQL), reply, EXTRACT]  # one call: no JSON retry
    answer = build(kind, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert answer.sql == GOOD_SQL and answer.valid
    assert answer.metrics.repair_steps == 1  # the malformed step ended the loop


@pytest.mark.parametrize("kind", PROGRAMS)
@pytest.mark.parametrize("reply", MALFORMED_DRAFTS.values(), ids=MALFORMED_DRAFTS.keys())
def test_an_unreadable_last_word_ends_in_the_best_query_so_far_with_the_reason(
    tiny_db: Path, tiny_schemas: Path, kind: str, reply: Any
) -> None:
    answers = [*failed_opening(kind), step("validate_sql", query=GOOD_SQL), step("finish"), reply]
    answer = build(kind, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    assert "malformed model reply" in answer.reason and answer.explanation.startswith("Best effort")
    assert answer.sql == GOOD_SQL and answer.valid and answer.confidence <= 0.3
    assert answer.metrics.judge_calls == 0  # V2 too: nothing was submitted, so nothing was judged


@pytest.mark.parametrize("kind", PROGRAMS)
@pytest.mark.parametrize("bad", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_arguments_of_the_wrong_type_become_an_observation(
    tiny_db: Path, tiny_schemas: Path, kind: str, bad: dict[str, Any]
) -> None:
    answers = [*failed_opening(kind), bad, step("validate_sql", query=GOOD_SQL), step("finish"), EXTRACT]
    answer = build(kind, tiny_db, tiny_schemas, answers).run("How many users are suspended?")
    loop = [s for s in answer.steps if s.kind in ("validate_sql", "retrieve_tables", "finish")]
    assert loop[0].note.startswith(f"Execution error in {bad['next_tool_name']}")
    assert answer.sql == GOOD_SQL and answer.valid


@pytest.mark.parametrize("spec", ["baseline", "v1", "v2"])
@pytest.mark.parametrize("reply", ["", MALFORMED_DRAFTS["no_sql_key_json"], MALFORMED_DRAFTS["no_sql_field"]],
                         ids=["empty", "json", "fields"])
def test_answer_one_records_a_malformed_reply_without_an_error(
    tiny_db: Path, tiny_schemas: Path, spec: str, reply: str
) -> None:
    program = build(spec, tiny_db, tiny_schemas, [reply] * 6)
    example = dspy.Example(question="How many users are suspended?", db_id="tiny", db_path=str(tiny_db),
                           gold_sql=GOOD_SQL)
    record = evaluation.answer_one(program, spec, 0, example)
    assert "error" not in record, record.get("error")  # the program itself coped; answer_one's net was not needed
    assert "malformed model reply" in record["reason"] and record["status"] == "failed"
    assert record["correct"] is False and record["sql"] == ""
    assert record["code"] == code_identity()  # which code answered, on every record


# --- judge failures ---------------------------------------------------------------------------


def test_unparseable_judge_output_scores_zero_with_the_reason_in_the_run(tiny_db: Path, tiny_schemas: Path) -> None:
    answers = [draft(GOOD_SQL)] * 4  # three candidates, then a redraft (the judge scored 0) that repeats them
    judge = RecordedLM(["not a verdict", "{still: not json"])
    program = ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=DummyLM(answers),
                           judge_lm=judge)  # fmt: skip
    answer = program.run("How many users are suspended?")
    judged = next(s for s in answer.steps if s.kind == "judge")
    assert judged.note.startswith("P(right) 0.00: judge output unusable")
    assert answer.judge_score == 0.0 and answer.readings[0].judge_score == 0.0
    assert not answer.metrics.judge_errors  # the judge answered, badly: a score, not a degradation
    assert answer.sql == GOOD_SQL and answer.confidence == pytest.approx(0.3)  # 0.2 raised into 0.3-0.5
    assert [s.kind for s in answer.steps] == ["draft", "check", "run", "sample", "judge", "choose"]


class FlakyEngine:
    """Answers as a DummyLM would for ``good_calls`` calls, then fails like a judge service that went down."""

    def __init__(self, answers: list[dict[str, Any]], good_calls: int):
        self.inner = DummyLM(answers)._engine_spec
        self.left = good_calls

    def complete(self, request: Any) -> Any:
        if self.left <= 0:
            raise RuntimeError("judge service went down")
        self.left -= 1
        return self.inner.complete(request)

    def stream(self, request: Any) -> Any:
        return self.complete(request)

    def close(self) -> None:
        pass


def test_judge_failing_mid_loop_degrades_v2_to_v1_and_says_so(tiny_db: Path, tiny_schemas: Path) -> None:
    answers = [*failed_opening("v2"), step("validate_sql", query=ALL_USERS),
               step("llm_judge_evaluate", query=ALL_USERS),
               step("validate_sql", query=GOOD_SQL), step("llm_judge_evaluate", query=GOOD_SQL), step("finish"),
               EXTRACT]  # fmt: skip
    engine = FlakyEngine([verdict(False, ["no filter"])], good_calls=1)
    judge = dspy.LM("flaky/judge", engine=engine, num_retries=0, cache=False)  # every call reaches the engine
    program = ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=DummyLM(answers),
                           max_repair_steps=10,
                           judge_lm=judge)  # fmt: skip
    answer = program.run("How many users are suspended?")
    verdicts = [s.note for s in answer.steps if s.kind == "llm_judge_evaluate"]
    assert verdicts[0].startswith("P(right) = 0.00. Issues: no filter")  # the first verdict arrived
    assert verdicts[1].startswith("The judge is unavailable")
    assert "judge service went down" in answer.metrics.judge_errors[0] and "the judge failed" in answer.reason
    assert answer.sql == GOOD_SQL and answer.valid
    assert answer.judge_score is None and answer.confidence == pytest.approx(NEUTRAL_CONFIDENCE)  # V1's rule
