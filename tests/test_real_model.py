"""End-to-end checks against the real embedded Qwen2.5-Coder GGUF (slow; a few short completions).

Skips only when the model truly cannot be built (llama_cpp not importable or a
part wheel missing/damaged), with the underlying error as the reason.
"""

from __future__ import annotations

import dspy
import pytest

from text2sql_dspy.programs.errors import ModelFilesError

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def local_lm() -> dspy.LM:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"llama_cpp is not importable: {exc}")
    from text2sql_dspy.programs.llm.factory import build_lm

    lm = build_lm("local", max_tokens=64)
    try:
        lm.engine.load()
    except ModelFilesError as exc:
        pytest.skip(f"embedded model cannot be built: {exc}")
    return lm


def test_raw_call(local_lm: dspy.LM) -> None:
    out = local_lm("Reply with exactly the word OK and nothing else.")
    assert isinstance(out, list) and len(out) == 1
    assert "OK" in out[0].upper()
    entry = local_lm.history[-1]
    assert entry["usage"]["prompt_tokens"] > 0
    assert entry["usage"]["completion_tokens"] > 0


def test_predict_records_usage(local_lm: dspy.LM) -> None:
    with dspy.context(lm=local_lm, track_usage=True, adapter=dspy.ChatAdapter()):
        pred = dspy.Predict("question -> answer")(question="What is 2 + 3? Answer with a number.")
    assert str(pred.answer).strip()
    assert "5" in str(pred.answer)
    usage = pred.get_lm_usage()[local_lm.model]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_json_schema_constrained(local_lm: dspy.LM) -> None:
    with dspy.context(lm=local_lm, adapter=dspy.JSONAdapter()):
        pred = dspy.Predict("question -> answer: int, is_even: bool")(question="What is 6 * 7?")
    assert pred.answer == 42
    assert pred.is_even is True


def test_context_overflow_is_a_clear_error(local_lm: dspy.LM) -> None:
    n_ctx = local_lm.engine.n_ctx
    with pytest.raises(dspy.ContextWindowExceededError, match=f"n_ctx={n_ctx}"):
        local_lm("word " * (n_ctx + 100))


def test_v2_answers_an_easy_bundled_question_with_sql_that_runs(local_lm: dspy.LM) -> None:
    from text2sql_dspy import ReActAgentV2, bundled_database
    from text2sql_dspy.programs.llm.factory import build_lm

    agent = ReActAgentV2(bundled_database(), retrieval_type="keyword", top_k=3, lm=build_lm("local"))
    result = agent.run("How many organizations are there?")
    assert result["valid"], result["reasoning_steps"]
    rows = agent.source().database.execute(result["query"])
    assert rows.ok and rows.rows, rows.error
    assert result["lm_calls"] >= 2 and result["judge_calls"] >= 1
