"""Judging: does a SQL query answer the question? Reference-free (the V2 agent's judge) or against a gold answer."""

from __future__ import annotations

import math
from typing import Any

import dspy
from pydantic import BaseModel, Field, field_validator

RUBRIC = """Score the query with this rubric:
1.0 perfect: fully answers the question with correct logic;
0.9 correct, with minor cosmetic differences (column order, an extra ORDER BY);
0.8 correct approach with minor issues;
0.7 mostly correct, one significant issue;
0.5-0.6 partially correct, missing elements;
0.3-0.4 wrong approach but related to the question;
0.0-0.2 completely wrong or irrelevant.
Be strict but fair: judge whether the query returns the data the user actually wants
(right tables, joins, filters, grouping, ordering and limit), not how it is written."""


class LLMJudgeOutput(BaseModel):
    """The judge's verdict. The score is clamped to [0, 1]; missing lists become empty."""

    is_correct: bool = False
    correctness_score: float = Field(default=0.0, ge=0.0, le=1.0)
    issues: list[str] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    reasoning: str = ""

    @field_validator("correctness_score", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> float:
        try:
            score = float(value)
        except (TypeError, ValueError):
            return 0.0
        return 0.0 if math.isnan(score) else min(1.0, max(0.0, score))

    @field_validator("issues", "suggestions", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> list[str]:
        if value is None or value == "":
            return []
        if isinstance(value, str):
            value = [value]
        return [str(v).strip() for v in value if str(v).strip() and str(v).strip().lower() not in {"none", "n/a"}]

    @field_validator("reasoning", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class JudgeSQL(dspy.Signature):
    __doc__ = (
        "You are an impartial SQL reviewer. Decide whether the SQL query correctly answers the question. "
        "You see what the query returned when it ran on the database: check that these columns and rows are "
        "what the question asks for (an empty result, NULLs or one repeated value often mean a wrong filter "
        "or join). If it is wrong, list concrete issues (wrong table, join, filter value, aggregation, grouping, "
        "ordering, limit, missing condition) and a fix for each.\n\n" + RUBRIC
    )

    question: str = dspy.InputField(desc="the user's original question")
    sql_query: str = dspy.InputField(desc="the SQL query under review")
    execution_result: str = dspy.InputField(desc="what the query returned: columns, row count, first rows, "
                                                 "or the error")
    is_correct: bool = dspy.OutputField(desc="true if the result is what the question asks for")
    issues: list[str] = dspy.OutputField(desc="semantic problems found; empty if none", default_factory=list)
    suggestions: list[str] = dspy.OutputField(desc="specific fixes, one per issue; empty if none", default_factory=list)


class JudgeAgainstReference(dspy.Signature):
    """You are an expert evaluator. Compare the predicted answer with the golden (expected) answer and score
    how well the prediction matches it in correctness, completeness and alignment with the expected answer.

    Scale: 1.0 a perfect match or an equivalent answer; 0.7-0.9 mostly correct with minor issues;
    0.4-0.6 partially correct; 0.0-0.3 incorrect or irrelevant. For SQL, equivalent queries that
    return the same rows count as a match even when written differently."""

    prediction: str = dspy.InputField(desc="the answer under evaluation")
    golden_answer: str = dspy.InputField(desc="the ground-truth answer")
    score: float = dspy.OutputField(desc="a single number from 0.0 to 1.0")
