"""One judge call: the judging signature on the judge's LM, over the query and what it returned.

The V2 agent and the optimizer metrics in ``optimize/`` both judge through :func:`judge_sql`, so
the agent and the metric read a reply the same way. The score is the judge model's probability
that the query is correct, read from its token log-probabilities at the ``is_correct`` answer:
a number the model cannot flatten by writing "0.95" for everything. An LM without token
probabilities (Anthropic) scores its written verdict as 1.0 or 0.0.
"""

from __future__ import annotations

from typing import Any

import dspy

from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.llm.factory import logprob_config
from text2sql_dspy.programs.llm.fields import FIELD_END
from text2sql_dspy.programs.llm.token_logprobs import field_tokens, probability_of_true, reply_tokens
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.signatures.judging import LLMJudgeOutput

__all__ = ["ACCEPT_SCORE", "JUDGE_MAX_TOKENS", "LOW_SCORE", "VERDICT_MAX_TOKENS", "judge_sql"]

# Where a judge score (the judge model's probability that an answer is right) changes what is done with it:
ACCEPT_SCORE = 0.7  # the V2 card's bar for "correct"; confidence bands and reports use it
# Below this the judge has rejected the query: it explains why, and V2 redrafts once from the facts. Set below the
# scores the embedded judge gives right answers.
LOW_SCORE = 0.35

# Each judge call's reply, capped at what its fields need:
VERDICT_MAX_TOKENS = 16  # the verdict alone, "[[ ## is_correct ## ]]\nTrue", ended at FIELD_END
JUDGE_MAX_TOKENS = 200  # the explanation: the verdict and two short lists, issues and suggestions, with their markers


def judge_sql(
    predictor: dspy.Predict, lm: Any, *, question: str, sql: str, execution_result: str, explain: bool = True,
    **context: str,
) -> LLMJudgeOutput:
    """``predictor`` (over :class:`~signatures.judging.JudgeSQL`) run on ``lm``.

    The judge first writes its verdict alone (a few tokens; the score is read there). Only a
    query it rejects, and only with ``explain``, costs a second call for the issues and fixes
    (its prompt is then served from the KV cache). An unparseable reply scores 0.0, with the
    reason as the verdict's only issue. Errors of the LM itself (network, missing key) propagate:
    the caller decides whether to degrade. ``context`` holds further inputs of a judging signature
    that has them (``table_schemas``, say).
    """
    emit("judging", sql=sql)
    inputs = {**context, "question": question, "sql_query": sql, "execution_result": execution_result}
    verdict = _judge_once(predictor, lm, inputs, max_tokens=VERDICT_MAX_TOKENS, stop=[FIELD_END])
    if explain and verdict.correctness_score < LOW_SCORE and not verdict.issues:
        explained = _judge_once(predictor, lm, inputs, max_tokens=JUDGE_MAX_TOKENS)
        verdict = verdict.model_copy(update={"issues": explained.issues, "suggestions": explained.suggestions})
    return verdict


def _judge_once(predictor: dspy.Predict, lm: Any, inputs: dict[str, str], **config: Any) -> LLMJudgeOutput:
    with dspy.context(lm=lm):
        pred, error = predict_or_error(predictor, config=logprob_config(lm, **config), **inputs)
    if pred is None:
        return LLMJudgeOutput(is_correct=False, correctness_score=0.0, issues=[f"judge output unusable: {error}"])
    written = pred.get("is_correct")
    p_true = probability_of_true(field_tokens(reply_tokens(pred.get("logprobs")), "is_correct"))
    if p_true is None:
        score, source = (1.0 if written is True else 0.0), "written verdict"
    else:
        score, source = p_true, "judge model's probability of 'True'"
    return LLMJudgeOutput.model_validate({
        "is_correct": written if isinstance(written, bool) else score >= 0.5,
        "correctness_score": score,
        "issues": pred.get("issues") or [],
        "suggestions": pred.get("suggestions") or [],
        "reasoning": f"P(correct) = {score:.2f} ({source}), judged on the query's execution result.",
    })
