"""Reading token log-probabilities: a field's tokens, their mean probability, P(True); who returns them;
and how drafting and judging use them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import MARKER_P, Scripted, logprob_lm, reply_text_and_tokens, scripted_draft, scripted_verdict
from text2sql_dspy.programs.agents.drafting import NEUTRAL_CONFIDENCE, draft_sql
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.llm.factory import build_lm, supports_logprobs
from text2sql_dspy.programs.llm.token_logprobs import (
    field_tokens,
    mean_token_probability,
    probability_of_true,
    reply_tokens,
)
from text2sql_dspy.signatures import DraftSQL, JudgeSQL


def tok(text: str, p: float = 0.5, top: dict[str, float] | None = None) -> dict:
    """A token in the OpenAI shape DSPy puts in ``Prediction.logprobs``."""
    alternatives = [{"token": t, "logprob": math.log(q)} for t, q in (top or {}).items()]
    return {"token": text, "logprob": math.log(p), "top_logprobs": alternatives}


REPLY = [tok("[[ ## sql ## ]]"), tok("\n"), tok("SELECT", 0.9), tok(" 1", 0.4), tok("\n\n"),
         tok("[[ ##"), tok(" completed ## ]]")]  # fmt: skip


def test_reply_tokens_reads_either_shape() -> None:
    assert reply_tokens(None) == [] and reply_tokens({}) == []
    assert reply_tokens({"content": REPLY[:2]}) == REPLY[:2]
    assert reply_tokens(SimpleNamespace(content=REPLY[:1])) == REPLY[:1]


def test_field_tokens_are_the_fields_value_without_markers_or_surrounding_whitespace() -> None:
    assert [t["token"] for t in field_tokens(REPLY, "sql")] == ["SELECT", " 1"]
    assert field_tokens(REPLY, "explanation") == []
    last = [tok("[[ ## is_correct ## ]]"), tok("\n"), tok("True"), tok("\n")]  # no marker after it
    assert [t["token"] for t in field_tokens(last, "is_correct")] == ["True"]


def test_field_tokens_of_a_whole_chat_adapter_reply() -> None:
    text, tokens = reply_text_and_tokens(Scripted({"sql": "SELECT count(*) FROM users", "note": "x"}, {"sql": 0.7}))
    assert text.startswith("[[ ## sql ## ]]\nSELECT count(*) FROM users\n\n[[ ## note ## ]]")
    sql = field_tokens([{"token": t.token, "logprob": t.logprob} for t in tokens], "sql")
    assert "".join(t["token"] for t in sql) == "SELECT count(*) FROM users"
    assert {round(math.exp(t["logprob"]), 6) for t in sql} == {0.7}  # no marker token (p = MARKER_P) slipped in
    assert MARKER_P != 0.7


def test_mean_token_probability_is_the_geometric_mean() -> None:
    assert mean_token_probability([]) is None
    assert mean_token_probability([tok("a", 0.9), tok("b", 0.4)]) == pytest.approx(math.sqrt(0.36))
    assert mean_token_probability([tok("a", 0.5), {"token": "b", "logprob": None}]) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (tok("True", 0.6, {"True": 0.6, "False": 0.2, "Yes": 0.1}), 0.75),
        (tok(" true", 0.3, {" false": 0.6, " true": 0.3}), 1 / 3),  # any case, leading space
        (tok("T", 0.5, {"T": 0.5, "F": 0.5}), 0.5),  # a first token that starts the word
        (tok("True", 0.8), 1.0),  # no alternatives: the chosen token alone
        (tok("False", 0.8), 0.0),
        (tok("Maybe", 0.8, {"Maybe": 0.8, "Yes": 0.1}), None),  # neither answer: keep the written verdict
    ],
)
def test_probability_of_true(first: dict, expected: float | None) -> None:
    got = probability_of_true([first, tok("\n")])
    assert got == (None if expected is None else pytest.approx(expected))
    assert probability_of_true([]) is None


def test_which_lms_return_token_probabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEXT2SQL_MODEL", raising=False)
    assert supports_logprobs(build_lm("local"))  # the embedded engine (not loaded by building)
    assert supports_logprobs(dspy.LM("openai/gpt-4o-mini", api_key="x"))
    assert supports_logprobs(SimpleNamespace(model="hosted_vllm/Qwen/Qwen2.5-Coder-7B-Instruct"))
    assert not supports_logprobs(SimpleNamespace(model="anthropic/claude-haiku-4-5"))
    assert not supports_logprobs(DummyLM([]))
    assert not supports_logprobs(object())


def test_drafting_asks_for_logprobs_only_where_the_lm_returns_them() -> None:
    scripted = logprob_lm([scripted_draft("SELECT 1", 0.7)])
    assert draft_sql(dspy.Predict(DraftSQL), scripted, question="q", table_schemas="t").confidence == pytest.approx(0.7)
    assert scripted.engine.requests[0].config.logprobs == 5
    no_logprobs = logprob_lm([scripted_draft("SELECT 1", 0.7)], model="anthropic/scripted")
    result = draft_sql(dspy.Predict(DraftSQL), no_logprobs, question="q", table_schemas="t")
    assert no_logprobs.engine.requests[0].config.logprobs is None
    assert result.sql == "SELECT 1" and result.confidence == NEUTRAL_CONFIDENCE


def judge(lm: dspy.LM):  # noqa: ANN201
    return judge_sql(dspy.Predict(JudgeSQL), lm, question="How many?", sql="SELECT 1", execution_result="1 row",
                     explain=False)


def test_the_judge_score_is_p_true_even_against_the_written_verdict() -> None:
    verdict = judge(logprob_lm([scripted_verdict(0.35, correct=True)]))  # writes True, but P(True) is 0.35
    assert verdict.correctness_score == pytest.approx(0.35) and verdict.is_correct is True
    assert "probability of 'True'" in verdict.reasoning


def test_without_logprobs_the_judge_scores_its_written_verdict() -> None:
    for correct, score in ((True, 1.0), (False, 0.0)):
        verdict = judge(logprob_lm([scripted_verdict(0.35, correct=correct)], model="anthropic/scripted"))
        assert verdict.correctness_score == score and verdict.is_correct is correct
        assert "written verdict" in verdict.reasoning


def test_a_prefilled_reply_spells_its_text_and_its_field_holds_only_generated_tokens() -> None:
    from text2sql_dspy.programs.llm.token_logprobs import LogprobRecorder

    vocab = {0: "<pad>", 1: "SELECT", 2: " 1", 3: "<end>"}
    recorder = LogprobRecorder(2, vocab.__getitem__)
    logits = [-5.0, 0.0, -5.0, -5.0]  # token 1 most likely, then 2
    for step, chosen_before in enumerate([None, 1, 2]):
        ids = [0] * (10 + step)
        if chosen_before is not None:
            ids[-1] = chosen_before
        recorder(ids, list(logits) if step != 1 else [-5.0, -5.0, 0.0, -5.0])
    prefill = "[[ ## sql ## ]]\n"
    tokens = recorder.token_logprobs(prefill + "SELECT 1", greedy=False, prefill=prefill)
    assert "".join(t.token for t in tokens) == prefill + "SELECT 1"
    assert tokens[0].token == prefill and tokens[0].logprob == 0.0
    sql = field_tokens([{"token": t.token, "logprob": t.logprob} for t in tokens], "sql")
    assert [t["token"] for t in sql] == ["SELECT", " 1"] and all(t["logprob"] < 0 for t in sql)
