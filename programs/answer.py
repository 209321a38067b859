"""One answer, as every surface reads it: :class:`Answer`.

``Text2SQLProgram.run()`` returns it; the CLI prints it (``--json`` dumps it), the web page and its
JSON API show it. It is built from the fields of ``forward``'s ``dspy.Prediction`` (which the
optimizers and ``text2sql evaluate`` read), so the two never disagree.

A :class:`Reading` is one query the program considered: its votes, what the validator and the judge
said, and a preview of the rows it returned when the program ran it. The readings come from the
program's own checks: nothing here parses a trace or runs a query.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from text2sql_dspy.programs.db.database import QueryResult

PREVIEW_ROWS = 5  # rows a reading keeps


class Status(StrEnum):
    ANSWERED = "answered"  # a query that passed the validator
    UNSURE = "unsure"  # two readings the program cannot decide between (see ``alternatives``)
    REFUSED = "refused"  # the question or the drafted query was refused (a write, say)
    FAILED = "failed"  # no query passed the validator, or the model gave none


class Preview(BaseModel):
    """The first rows of a query's result, or its error."""

    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0  # rows fetched (at most the executor's cap)
    truncated: bool = False  # the executor's cap cut the result
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Always true: only a query the validator passed is run (the page's row template asks)."""
        return True

    @classmethod
    def of(cls, result: QueryResult, rows: int = PREVIEW_ROWS) -> Preview:
        if not result.ok:
            return cls(error=result.error)
        return cls(columns=list(result.columns), rows=[[json_value(v) for v in row] for row in result.rows[:rows]],
                   row_count=len(result.rows), truncated=result.truncated)


class Reading(BaseModel):
    """A query the program considered."""

    sql: str
    chosen: bool = False
    votes: int = 1  # drafts that wrote this query, or (V2) whose query returned the same result
    valid: bool = False
    findings: list[str] = Field(default_factory=list)  # the validator's errors, then its warnings
    judge_score: float | None = None
    preview: Preview | None = None  # None: not run
    difference: list[str] = Field(default_factory=list)  # when unsure: what this reading does that the other does not


class Step(BaseModel):
    """One step of the trace: a thought, the tool it called with which arguments, and what that returned."""

    thought: str = ""
    tool: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    observation: str = ""


class Metrics(BaseModel):
    lm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    by_model: dict[str, dict[str, Any]] = Field(default_factory=dict)  # model -> calls, tokens, cost


class Answer(BaseModel):
    """A question's answer: the SQL, how sure the program is, what else it considered, and what it cost."""

    question: str
    sql: str = ""
    explanation: str = ""
    status: Status
    reason: str = ""  # why the status is not "answered", or a note on how the answer was reached
    confidence: float = 0.0  # with ``calibrated``, the probability that the answer is right; else the program's score
    calibrated: bool = False  # ``confidence`` comes from this database's calibration (``text2sql calibrate``)
    sure: bool = False  # calibrated, and at or above the cut-off where verified answers were right 90% of the time
    calibration: str = ""  # what the calibration was fitted on
    judge_score: float | None = None
    drafts: int = 1  # drafts written for the question (V2 samples more when unsure)
    agreement: float | None = None  # the share of those drafts whose result the answer's query returns
    readings: list[Reading] = Field(default_factory=list)
    alternatives: list[Reading] = Field(default_factory=list)  # when unsure: the readings to choose between
    steps: list[Step] = Field(default_factory=list)
    metrics: Metrics = Field(default_factory=Metrics)

    @property
    def confidence_line(self) -> str:
        """The confidence in words a user can read: a probability when calibrated, else the score, named as such."""
        if self.calibrated:
            return f"chance right {self.confidence:.2f} ({self.calibration})"
        return f"confidence {self.confidence:.2f} (uncalibrated: text2sql calibrate fits it to this database)"

    @property
    def chosen(self) -> Reading | None:
        return next((r for r in self.readings if r.chosen), None)

    @classmethod
    def from_fields(cls, question: str, fields: dict[str, Any]) -> Answer:
        """The answer that ``forward``'s ``fields`` describe."""
        sql = str(fields.get("query") or "")
        reason = str(fields.get("fallback_reason") or "")
        if not sql:
            status = Status.REFUSED if reason.startswith("refused") else Status.FAILED
            reason = reason or "the model gave no query"
        readings = [Reading.model_validate(r) for r in fields.get("readings") or []]
        by_sql = {r.sql: r for r in readings}
        alternatives = [by_sql[q] for q in fields.get("alternatives") or [] if q in by_sql] if sql else []
        if sql:
            status = Status.UNSURE if len(alternatives) >= 2 else Status.ANSWERED
            if status is Status.UNSURE and not reason:
                reason = "two readings give different results and the checks support both about as much"
        steps = [Step.model_validate(_step(s)) for s in fields.get("reasoning_steps") or [] if isinstance(s, dict)]
        metrics = Metrics(
            lm_calls=int(fields.get("lm_calls") or 0), prompt_tokens=int(fields.get("prompt_tokens") or 0),
            completion_tokens=int(fields.get("completion_tokens") or 0),
            cost_usd=float(fields.get("total_cost") or 0.0), latency_s=float(fields.get("latency_s") or 0.0),
            by_model=dict(fields.get("by_model") or {}),
        )
        return cls(question=question, sql=sql, explanation=str(fields.get("explanation") or ""), status=status,
                   reason=reason, confidence=float(fields.get("confidence") or 0.0),
                   calibrated=bool(fields.get("calibrated")), sure=bool(fields.get("sure")),
                   calibration=str(fields.get("calibration") or ""),
                   judge_score=fields.get("judge_score"), drafts=int(fields.get("candidates") or 1),
                   agreement=fields.get("agreement"), readings=readings, alternatives=alternatives, steps=steps, metrics=metrics)


def _step(step: dict[str, Any]) -> dict[str, Any]:
    args = step.get("args")
    return {"thought": str(step.get("thought") or ""), "tool": str(step.get("tool") or ""),
            "args": args if isinstance(args, dict) else {}, "observation": str(step.get("observation") or "")}


def json_value(value: Any) -> Any:
    """A cell as JSON: numbers, text, booleans and NULL as they are; dates in ISO form; anything else as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)
