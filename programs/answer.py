"""A user's question, checked before any model sees it (:func:`check_question`), and its answer, as every surface
reads it: :class:`Answer`.

The programs build it as they answer; ``forward`` returns it inside a ``dspy.Prediction`` (``.answer``),
``Text2SQLProgram.run()`` returns it as it is. Every surface reads this one object: the CLI prints it
(``--json`` dumps it), the web page and ``/api/ask`` show it, ``text2sql evaluate`` records it and the
calibration reads its signals.

A :class:`Reading` is one query the program considered: its votes, what the validator and the judge
said, and a preview of the rows it returned when the program ran it. The readings come from the
program's own checks: nothing here parses a trace or runs a query.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, computed_field

from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.errors import QuestionError
from text2sql_dspy.programs.query.findings import Finding
from text2sql_dspy.programs.verdict import VerdictInputs, words_of

MAX_QUESTION_CHARS = 4000
PREVIEW_ROWS = 5  # rows a reading keeps


def check_question(question: Any) -> str:
    """The question, stripped; :class:`QuestionError` if it is empty, not UTF-8, or too long to be a question."""
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty. Ask something about the data, e.g. 'How many users are blocked?'")
    question = question.strip()
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:  # e.g. argv bytes from a non-UTF-8 terminal, kept as lone surrogates
        raise QuestionError(
            f"the question holds bytes that are not valid UTF-8 (character {exc.start + 1}). Retype it, or save it "
            "as UTF-8."
        ) from None
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. Shorten it."
        )
    return question


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
    findings: list[Finding] = Field(default_factory=list)  # what the validator's rules found, errors first
    confidence: float | None = None  # the first draft that wrote it: its tokens' geometric-mean probability
    weakest: float | None = None  # ... and its least likely token's probability (None: the LM gives none)
    tokens: int = 0  # ... and how many tokens its SQL took
    doubts: int = 0  # ... and how many of them it wrote with a probability under 0.5
    margin: float | None = None  # ... and its narrowest lead of a written token over the likeliest other
    judge_score: float | None = None
    generator: str = ""  # what wrote it first: a generator's name (draft, sample, pairs, plan...) or a program step
    generators: list[str] = Field(default_factory=list)  # every generator whose draft gave the same result, in order
    preview: Preview | None = None  # None: not run
    difference: list[str] = Field(default_factory=list)  # when unsure: what this reading does that the other does not

    @property
    def warnings(self) -> list[Finding]:
        """Its findings that do not invalidate it (the lints' among them): what a user should read with it."""
        return [f for f in self.findings if not f.is_error]


class Step(BaseModel):
    """One step of the trace, as the program took it: what it did (``kind``), to which query, and what it found."""

    kind: str  # draft, sample, redraft, check, run, judge, choose; a repair step: its tool's name
    generator: str = ""  # a drafting step's generator
    sql: str = ""
    note: str = ""  # the outcome in a line: a draft's confidence, the checks' verdict, the rows, the judge's score
    thought: str = ""  # a repair step's reasoning


class Metrics(BaseModel):
    """What the answer cost, and how much work it took."""

    lm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    by_model: dict[str, dict[str, Any]] = Field(default_factory=dict)  # model -> calls, tokens, cost
    validations: int = 0  # queries the validator checked (each distinct query once)
    judge_calls: int = 0
    redrafts: int = 0  # drafts written from what was wrong with an earlier one
    repair_steps: int = 0  # steps of the ReAct repair loop
    retrievals: int = 1  # table searches, the prompt's own included
    judge_errors: list[str] = Field(default_factory=list)  # the judge's LM failed: the answer was reached without it
    cut_replies: int = 0  # LM replies cut before they ended: at their token cap, or in a repetition loop
    by_generator: dict[str, dict[str, int | float]] = Field(default_factory=dict)  # generator -> drafts, their seconds


class Answer(BaseModel):
    """A question's answer: the SQL, how sure the program is, what else it considered, and what it cost."""

    question: str
    sql: str = ""
    explanation: str = ""
    status: Status
    reason: str = ""  # why the status is not "answered", or a note on how the answer was reached
    confidence: float = 0.0  # with ``verdict_inputs``, the probability that the answer is right; else the program's
    # own score
    raw_confidence: float | None = None  # the program's own score, where ``confidence`` is calibrated
    calibrated: bool = False  # ``confidence`` comes from this database's calibration (``text2sql calibrate``)
    calibration: str = ""  # what the calibration was fitted on
    verdict_inputs: VerdictInputs | None = None  # what the verdict is decided from besides ``confidence`` (None: the
    # score is no probability, and has no verdict)
    basis: str = ""  # what the confidence is estimated from: this database's calibration, or public benchmarks
    judge_score: float | None = None
    drafts: int = 1  # drafts written for the question (V2 samples more when unsure)
    agreement: float | None = None  # the share of those drafts whose result the answer's query returns
    tables: list[str] = Field(default_factory=list)  # the tables the prompt showed, and any found later
    readings: list[Reading] = Field(default_factory=list)
    alternatives: list[Reading] = Field(default_factory=list)  # when unsure: the readings to choose between
    steps: list[Step] = Field(default_factory=list)
    metrics: Metrics = Field(default_factory=Metrics)

    @computed_field
    @property
    def verdict(self) -> str:
        """How sure, in words: "likely right", "check this" or "likely wrong", decided by the one rule from
        ``confidence`` and ``verdict_inputs`` (:func:`~.verdict.words_of`); :data:`~.verdict.UNRATED` without them."""
        return words_of(self.confidence, self.verdict_inputs)

    @property
    def confidence_line(self) -> str:
        """How sure the program is, in words a user can read: "likely right (0.92; estimated from ...)", or where
        nothing estimates a probability, the program's own score named as such."""
        if self.verdict_inputs is not None:
            return f"{self.verdict} ({self.confidence:.2f}; {self.basis})"
        return f"confidence {self.confidence:.2f} (uncalibrated: text2sql calibrate fits it to this database)"

    @property
    def noted(self) -> list[Finding]:
        """The warnings on the answer's own query, which a user should read with it (the lints' among them)."""
        chosen = self.chosen
        return chosen.warnings if chosen is not None and self.sql else []

    @property
    def chosen(self) -> Reading | None:
        return next((r for r in self.readings if r.chosen), None)

    @property
    def valid(self) -> bool:
        """Whether the answer's query passed the validator."""
        chosen = self.chosen
        return chosen is not None and chosen.valid


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
