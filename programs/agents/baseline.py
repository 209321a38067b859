"""The baseline: one drafting call over the retrieved schemas, no loop. Every agent is compared with it."""

from __future__ import annotations

from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.programs.db.validator import clean_sql
from text2sql_dspy.signatures import DraftSQL


class Baseline(Text2SQLProgram):
    """Retrieve the top-k tables, draft once, return the draft: unless it writes, which is refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.draft = dspy.Predict(DraftSQL)

    def answer(self, question: str, source: DataSource) -> dict[str, Any]:
        tables, schemas = self.retrieve(source, question)
        draft, error = predict_or_error(self.draft, question=question, table_schemas=schemas)
        sql = clean_sql(str(draft.sql or "")) if draft else ""
        if sql and (check := source.validator.validate(sql)).dangerous:
            error, sql = "refused, the draft is not a read-only query: " + "; ".join(check.errors), ""
        return {
            "query": sql,
            "explanation": str(draft.explanation or "") if draft else "",
            "confidence": clamp01(draft.confidence) if draft else 0.0,
            "judge_score": None,
            "retrieved_tables": tables,
            "fallback_reason": error,
            "reasoning_steps": [{"thought": "Draft once.", "tool": "draft", "args": {"tables": tables},
                                 "observation": sql or error}],
        }


def clamp01(value: Any) -> float:
    """``value`` as a float in [0, 1]; 0.0 when it is not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, number)) if number == number else 0.0
