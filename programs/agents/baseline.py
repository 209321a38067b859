"""The baseline: one drafting call over the schema view, no loop. Every agent is compared with it."""

from __future__ import annotations

from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.drafting import draft_sql
from text2sql_dspy.programs.answer import Reading
from text2sql_dspy.programs.query.describe import describe_query
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.signatures import DraftSQL


class Baseline(Text2SQLProgram):
    """Show the schema (whole, or the retrieved tables), draft once, return the draft: unless it writes, which is refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.draft = dspy.Predict(DraftSQL)

    def answer(self, question: str, source: DataSource, hint: str = "", history: str = "") -> dict[str, Any]:
        view = self.schema(source, question, hint, history)
        draft = draft_sql(self.draft, self.lm, source=source, question=question, table_schemas=view.text, facts=view.facts)
        sql, error = draft.sql, draft.error
        if sql and (check := source.validator.validate(sql)).dangerous:
            error, sql = "refused, the draft is not a read-only query: " + "; ".join(check.errors), ""
        return {
            "query": sql,
            "explanation": describe_query(sql, source.dialect) if sql else "",
            "confidence": draft.confidence if sql else 0.0,
            "judge_score": None,
            "retrieved_tables": view.tables,
            "fallback_reason": error,
            "readings": [Reading(sql=sql, chosen=True, valid=check.valid, findings=[*check.errors, *check.warnings]
                                 ).model_dump()] if sql else [],
            "reasoning_steps": [{"thought": "Draft once.", "tool": "draft", "args": {"tables": view.tables},
                                 "observation": sql or error}],
        }
