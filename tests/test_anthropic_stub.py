"""The Anthropic path as far as it goes offline: the real ``dspy.LM("anthropic/...")`` request path against a stub.

Claude cannot be reached from here. The server in these tests is a loopback stub
(tests/stub_server.py) that answers in the Messages API's shape with replies the test wrote, so
what is proven is the request (model, system prompt, limits, key, stop marker) and the parsing
of the reply, never that Claude answers well. Both ways to point the client elsewhere are
covered: ``api_base`` (DSPy's own lm15 client) and ``ANTHROPIC_BASE_URL`` (which DSPy hands to
LiteLLM).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stub_server import StubReply, StubRequest, StubServer, anthropic_reply

STUB_SQL = "SELECT count(*) FROM organizations"
STUB_KEY = "stub-key-not-an-anthropic-key"
QUESTION = "How many organizations are there?"


def stub_replies(request: StubRequest) -> StubReply:
    """The stub's script: a verdict for the judge's prompt, the SQL for a drafting prompt."""
    system = request.body["system"]
    system = system if isinstance(system, str) else " ".join(part["text"] for part in system)
    reply = "[[ ## is_correct ## ]]\nTrue" if "is_correct" in system else f"[[ ## sql ## ]]\n{STUB_SQL}"
    return anthropic_reply(reply)(request)


def system_text(body: dict) -> str:
    system = body["system"]
    return system if isinstance(system, str) else "".join(part["text"] for part in system)


@pytest.mark.parametrize("route", ["api_base", "ANTHROPIC_BASE_URL"])
def test_v2_on_anthropic_sends_model_system_prompt_and_limits_and_parses_the_stubs_reply(
    route: str, tiny_db: Path, tiny_schemas: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from text2sql_dspy.programs.agents.drafting import DRAFT_MAX_TOKENS
    from text2sql_dspy.programs.agents.judge import VERDICT_MAX_TOKENS
    from text2sql_dspy.programs.agents.registry import make_program
    from text2sql_dspy.programs.llm.factory import build_lm, supports_logprobs, supports_prefill
    from text2sql_dspy.programs.usage import cost_usd

    with StubServer(stub_replies) as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", STUB_KEY)
        if route == "api_base":
            lm = build_lm("anthropic/claude-haiku-4-5", api_base=stub.url + "/v1", cache=False)
        else:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
            lm = build_lm("anthropic/claude-haiku-4-5", cache=False)
        assert not supports_logprobs(lm) and not supports_prefill(lm)
        program = make_program("v2", db_path=tiny_db, schema_path=tiny_schemas, lm=lm, retrieval_type="keyword")
        answer = program.run(QUESTION)

    assert answer.sql == STUB_SQL and answer.valid  # the stub's reply, parsed into the answer
    judged = [s.note for s in answer.steps if s.kind == "judge"]
    assert judged and "(written verdict)" in judged[0] and answer.judge_score == 1.0  # no logprobs on this API
    # Without token probabilities the draft's confidence is neutral, so V2 draws one sample at 0.7 (Anthropic
    # takes no seed); it agrees with the greedy draft, and the judge gets the one result.
    greedy, sample, verdict = stub.requests
    sent = [(r.body["temperature"], r.body["max_tokens"], "seed" in r.body) for r in stub.requests]
    assert sent == [(0.0, DRAFT_MAX_TOKENS, False), (0.7, DRAFT_MAX_TOKENS, False), (0.0, VERDICT_MAX_TOKENS, False)]
    for request in stub.requests:
        assert request.path.endswith("/v1/messages")
        assert request.headers["x-api-key"] == STUB_KEY and request.headers["anthropic-version"]
        assert request.body["model"] == "claude-haiku-4-5"
        assert request.body["messages"][-1]["role"] == "user"  # no prefilled reply
        assert request.body["stop_sequences"] == ["\n\n[["]
    assert "organizations (" in system_text(greedy.body) and "`sql`" in system_text(greedy.body)  # schema, format
    assert "impartial SQL reviewer" in system_text(verdict.body) and "`is_correct`" in system_text(verdict.body)
    assert QUESTION in str(greedy.body["messages"][-1]["content"])
    usage = answer.metrics.by_model["anthropic/claude-haiku-4-5"]  # the stub's token counts, priced as Haiku 4.5
    assert usage["calls"] == answer.metrics.lm_calls == 3
    assert usage["prompt_tokens"] == 3 * 13 and usage["completion_tokens"] == 3 * 9
    cost = answer.metrics.cost_usd
    assert cost == pytest.approx(cost_usd("claude-haiku-4-5", 39, 27)) and cost > 0

def test_without_a_key_the_anthropic_path_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from text2sql_dspy.programs.errors import ConfigurationError
    from text2sql_dspy.programs.llm.factory import build_lm

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="set ANTHROPIC_API_KEY"):
        build_lm("anthropic/claude-sonnet-4-5")
