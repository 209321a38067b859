"""One judge call: the judging signature on the judge's LM, as a verdict that never raises for bad output.

The V2 agent's ``llm_judge_evaluate`` tool and the optimizer metrics in ``optimize/`` both judge
through :func:`judge_sql`, so the agent and the metric read a reply the same way.
"""

from __future__ import annotations

from typing import Any

import dspy

from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.signatures.judging import LLMJudgeOutput


def judge_sql(
    predictor: dspy.Predict, lm: Any, *, question: str, sql: str, table_schemas: str, explanation: str = ""
) -> LLMJudgeOutput:
    """``predictor`` (over :class:`~signatures.judging.JudgeSQL`) run on ``lm``.

    An unparseable reply scores 0.0, with the reason as the verdict's only issue. Errors of the LM
    itself (network, missing key) propagate: the caller decides whether to degrade.
    """
    with dspy.context(lm=lm):
        pred, error = predict_or_error(
            predictor, question=question, sql_query=sql, table_schemas=table_schemas, agent_explanation=explanation
        )
    if pred is None:
        return LLMJudgeOutput(is_correct=False, correctness_score=0.0, issues=[f"judge output unusable: {error}"])
    return LLMJudgeOutput.from_prediction(pred)


def schemas_for_judge(source: DataSource, tables: list[str]) -> str:
    """The schemas the judge reads: the tables the query uses, rendered in full."""
    return source.catalog.render(tables)
