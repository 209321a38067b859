"""The served path's contracts, checked against a loopback stub server (a stub, not a model; tests/stub_server.py).

What goes over the wire to an OpenAI-compatible server (token log-probabilities asked for, the stop
marker, no prefilled reply, temperature and seed for samples), what comes back without
log-probabilities (the judge's written verdict), which LM judges, and the client settings.
"""

from __future__ import annotations

import dspy
import pytest

from tests.stub_server import StubServer, openai_reply

DRAFT = "[[ ## sql ## ]]\nSELECT count(*) FROM organizations"


def test_v2_on_a_served_model_judges_on_that_model_unless_told_otherwise(tiny_db, tiny_schemas, monkeypatch) -> None:
    from text2sql_dspy.programs.agents.registry import make_program

    monkeypatch.setenv("TEXT2SQL_API_BASE", "http://127.0.0.1:9/v1")  # never called: building makes no request
    monkeypatch.delenv("TEXT2SQL_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("LLM_JUDGE_MODEL", raising=False)
    program = make_program("v2", db_path=tiny_db, schema_path=tiny_schemas, model_id="openai/served-model")
    assert program.judge_lm is program.lm and program.lm.model == "hosted_vllm/served-model"
    monkeypatch.setenv("TEXT2SQL_JUDGE_MODEL", "openai/served-judge")
    other = make_program("v2", db_path=tiny_db, schema_path=tiny_schemas, model_id="openai/served-model")
    assert other.judge_lm.model == "hosted_vllm/served-judge"


def test_a_served_model_is_not_cached_and_waits_as_configured(monkeypatch) -> None:
    from text2sql_dspy.programs.errors import ConfigurationError
    from text2sql_dspy.programs.llm.factory import build_lm

    monkeypatch.setenv("TEXT2SQL_TIMEOUT_S", "42")
    monkeypatch.setenv("TEXT2SQL_RETRIES", "0")
    served = build_lm("openai/served-model", api_base="http://127.0.0.1:9/v1")
    assert served.cache is False and served.kwargs["timeout"] == 42.0 and served.num_retries == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", "stub-key")
    assert build_lm("anthropic/claude-haiku-4-5").cache is True  # a hosted API keeps DSPy's cache
    monkeypatch.setenv("TEXT2SQL_TIMEOUT_S", "soon")
    with pytest.raises(ConfigurationError, match="TEXT2SQL_TIMEOUT_S must be a positive number of seconds"):
        build_lm("openai/served-model", api_base="http://127.0.0.1:9/v1")


def test_samples_send_their_temperature_and_seed(tiny_db) -> None:
    from text2sql_dspy.programs.agents.drafting import draft_sql
    from text2sql_dspy.programs.llm.factory import build_lm
    from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
    from text2sql_dspy.signatures import DraftSQL

    with StubServer(openai_reply(DRAFT)) as stub:
        lm = build_lm("openai/stub-model", api_base=stub.url + "/v1")
        with dspy.context(adapter=StablePrefixAdapter()):
            for seed in (1, 2):
                draft_sql(dspy.Predict(DraftSQL), lm, question="How many organizations are there?",
                          table_schemas="CREATE TABLE organizations (id INTEGER PRIMARY KEY);", temperature=0.7,
                          seed=seed)
    assert [(r.body["temperature"], r.body["seed"]) for r in stub.requests] == [(0.7, 1), (0.7, 2)]
    # max_tokens, not max_completion_tokens: llama.cpp's server ignores the latter and writes to the context's end
    assert all(r.body["model"] == "stub-model" and r.body["max_tokens"] == 320 for r in stub.requests)
    assert not any("max_completion_tokens" in r.body for r in stub.requests)


def test_the_judge_falls_back_to_the_written_verdict_when_a_server_returns_no_logprobs() -> None:
    from text2sql_dspy.programs.agents.drafting import NEUTRAL_CONFIDENCE, draft_sql
    from text2sql_dspy.programs.agents.judge import judge_sql
    from text2sql_dspy.programs.llm.factory import build_lm
    from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
    from text2sql_dspy.signatures import DraftSQL, JudgeSQL

    def reply(request):  # a stub server that ignores "logprobs": true, as some servers do
        system = request.body["messages"][0]["content"]
        return openai_reply("[[ ## is_correct ## ]]\nTrue" if "is_correct" in system else DRAFT)(request)

    with StubServer(reply) as stub:
        lm = build_lm("openai/stub-without-logprobs", api_base=stub.url + "/v1")
        with dspy.context(adapter=StablePrefixAdapter()):
            verdict = judge_sql(dspy.Predict(JudgeSQL), lm, question="How many organizations are there?",
                                sql="SELECT count(*) FROM organizations", execution_result="2", explain=False)
            draft = draft_sql(dspy.Predict(DraftSQL), lm, question="How many organizations are there?",
                              table_schemas="CREATE TABLE organizations (id INTEGER PRIMARY KEY);")
    assert verdict.correctness_score == 1.0 and verdict.is_correct and "(written verdict)" in verdict.reasoning
    assert draft.sql == "SELECT count(*) FROM organizations" and draft.confidence == NEUTRAL_CONFIDENCE
    for request in stub.requests:  # asked for them all the same, with the stop marker and no prefilled reply
        body = request.body
        assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["stop"] == ["\n\n[["]
        assert body["messages"][-1]["role"] == "user" and body["temperature"] == 0.0
