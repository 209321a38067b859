"""The baseline: one drafting call over the schema view, no loop. Every agent is compared with it."""

from __future__ import annotations

from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.drafting import draft_sql
from text2sql_dspy.programs.answer import Answer, Preview, Reading, Status, Step
from text2sql_dspy.programs.conversation import History
from text2sql_dspy.programs.query.describe import describe_query
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.signatures import DraftSQL


class Baseline(Text2SQLProgram):
    """Show the schema (whole, or the retrieved tables), draft once, return the draft: unless it writes, which is
    refused."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.draft = dspy.Predict(DraftSQL)

    def answer(self, question: str, source: DataSource, hint: str = "", history: History = History()) -> Answer:
        view = self.schema(source, question, hint, history.text)
        draft = draft_sql(self.draft, self.lm, source=source, question=question, table_schemas=view.text,
                          facts=view.facts, shown=view.renamed)
        steps = [Step(kind="draft", sql=draft.sql, note=draft.error or f"confidence {draft.confidence:.2f}")]
        if not draft.sql:
            return Answer(question=question, status=Status.FAILED, reason=draft.error or "the model gave no query",
                          tables=view.tables, steps=steps)
        check = source.validator.validate(draft.sql, question=question)
        reading = Reading(sql=draft.sql, chosen=not check.dangerous, valid=check.valid, findings=list(check.findings),
                          confidence=draft.confidence, weakest=draft.weakest, tokens=draft.tokens)
        if check.dangerous:
            return Answer(question=question, status=Status.REFUSED, tables=view.tables, readings=[reading], steps=steps,
                          reason="refused, the draft is not a read-only query: " + "; ".join(check.errors))
        confidence = draft.confidence
        if self.verifier is not None and check.valid and source.database is not None:  # what it returns, to verify
            reading = reading.model_copy(update={"preview": Preview.of(source.database.execute(draft.sql))})
            confidence = self.verifier.probability(reading, question, early=True)
        return Answer(question=question, sql=draft.sql, explanation=describe_query(draft.sql, source.dialect),
                      status=Status.ANSWERED, confidence=confidence, tables=view.tables, readings=[reading],
                      steps=steps)
