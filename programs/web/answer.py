"""What the page and the API show for one answer: the SQL formatted, its rows, the verdict in words, the candidates.

Every query shown with rows here went through the database's validator and then its read-only
executor (:func:`run_read_only`); nothing else in the web package runs SQL.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.agents.thresholds import ACCEPT_SCORE, LOW_SCORE
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.programs.web.chart import Chart, choose_chart

MAX_ROWS = 1000  # rows fetched for the table, the chart and the CSV
SHOWN_ROWS = 20  # rows the page's table shows
CANDIDATE_ROWS = 5


@dataclass(frozen=True)
class Execution:
    """A query checked by the validator and, if it passed, run read-only."""

    sql: str
    valid: bool
    findings: str  # the validator's verdict, as it renders it
    result: QueryResult | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.ok

    @property
    def error(self) -> str | None:
        if not self.valid:
            return self.findings
        return None if self.result is None else self.result.error

    @property
    def columns(self) -> list[str]:
        return list(self.result.columns) if self.ok else []

    @property
    def rows(self) -> list[tuple]:
        return list(self.result.rows) if self.ok else []

    @property
    def row_count(self) -> str:
        """``"12"``, or ``"1000+"`` when the cap cut the result."""
        if not self.ok:
            return "0"
        return f"{len(self.result.rows)}+" if self.result.truncated else str(len(self.result.rows))

    def to_json(self, rows: int = SHOWN_ROWS) -> dict[str, Any]:
        return {
            "sql": self.sql, "valid": self.valid, "error": self.error, "columns": self.columns,
            "rows": [[json_value(v) for v in row] for row in self.rows[:rows]],
            "row_count": len(self.rows), "truncated": bool(self.ok and self.result.truncated),
        }


def run_read_only(source: DataSource, sql: str, *, max_rows: int = MAX_ROWS) -> Execution:
    """Validate ``sql`` against ``source``; run the validator's cleaned query read-only only if it passed."""
    verdict = source.validator.validate(sql)
    if not verdict.valid or source.database is None:
        return Execution(verdict.sql or sql, verdict.valid, verdict.render())
    return Execution(verdict.sql, True, verdict.render(), source.database.execute(verdict.sql, max_rows=max_rows))


def pretty_sql(sql: str, dialect: str) -> str:
    """``sql`` laid out by sqlglot; as given when sqlglot cannot parse it."""
    if not sql.strip():
        return ""
    try:
        return ";\n".join(sqlglot.transpile(sql, read=dialect, write=dialect, pretty=True))
    except SqlglotError:
        return sql


CONFIDENCE_WORDS = ("likely right", "check this", "probably wrong: check it carefully")
JUDGE_WORDS = (
    "the judge thinks it answers the question", "the judge is unsure", "the judge thinks it does not answer the question"
)


def in_words(score: float | None, words: tuple[str, str, str], missing: str) -> str:
    """``score`` against the agents' bars: at least :data:`ACCEPT_SCORE`, at least :data:`LOW_SCORE`, or below."""
    if score is None:
        return missing
    return words[0] if score >= ACCEPT_SCORE else words[1] if score >= LOW_SCORE else words[2]


def confidence_words(confidence: float | None) -> str:
    return in_words(confidence, CONFIDENCE_WORDS, "no confidence given")


def judge_words(score: float | None) -> str:
    return in_words(score, JUDGE_WORDS, "not judged")


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


def cell_text(value: Any) -> str:
    return "NULL" if value is None else str(json_value(value))


@dataclass
class Candidate:
    """A query the program considered, what each check said of it, and its first rows."""

    sql: str
    checks: list[tuple[str, str]] = field(default_factory=list)  # (tool, observation)
    chosen: bool = False
    execution: Execution | None = None


def candidates_from_trace(steps: list[dict[str, Any]], final_sql: str, source: DataSource) -> list[Candidate]:
    """Every distinct query the trace's steps named, in order, with their checks; valid ones run read-only."""
    found: dict[str, Candidate] = {}
    for step in steps:
        args = step.get("args")
        sql = args.get("query") if isinstance(args, dict) else None
        if not isinstance(sql, str) or not sql.strip():
            continue
        candidate = found.setdefault(sql, Candidate(sql))
        candidate.checks.append((str(step.get("tool", "")), str(step.get("observation", ""))))
    for candidate in found.values():
        candidate.chosen = candidate.sql == final_sql
        candidate.execution = run_read_only(source, candidate.sql, max_rows=CANDIDATE_ROWS)
    return list(found.values())


@dataclass
class Answer:
    """One answered question as the page shows it; ``fields`` is the program's ``run()`` dict."""

    question: str
    db: str
    program: str
    fields: dict[str, Any]
    sql_pretty: str
    execution: Execution | None
    chart: Chart | None
    candidates: list[Candidate]

    @property
    def confidence_words(self) -> str:
        return confidence_words(self.fields.get("confidence"))

    @property
    def judge_words(self) -> str:
        return judge_words(self.fields.get("judge_score"))

    @property
    def level(self) -> str:
        """``good``, ``warn`` or ``bad``: how the page colours the verdict."""
        return {CONFIDENCE_WORDS[0]: "good", CONFIDENCE_WORDS[1]: "warn"}.get(self.confidence_words, "bad")

    def to_json(self) -> dict[str, Any]:
        """``run()``'s fields (made JSON-safe), plus the database, the formatted SQL, the result and the chart."""
        fields = {k: _jsonable(v) for k, v in self.fields.items()}
        return {
            **fields, "question": self.question, "db": self.db, "program": self.program, "sql_pretty": self.sql_pretty,
            "confidence_words": self.confidence_words, "judge_words": self.judge_words,
            "result": None if self.execution is None else self.execution.to_json(),
            "chart": None if self.chart is None else {"kind": self.chart.kind, "figure": self.chart.figure,
                                                     "value": json_value(self.chart.value), "label": self.chart.label},
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return json_value(value)


def build_answer(question: str, db: str, program: str, fields: dict[str, Any], source: DataSource) -> Answer:
    """The page's view of ``run()``'s ``fields``: the final query re-checked and run read-only, a chart, candidates."""
    sql = str(fields.get("query") or "")
    execution = run_read_only(source, sql) if sql.strip() else None
    chart = choose_chart(execution.columns, execution.rows) if execution is not None and execution.ok else None
    steps = fields.get("reasoning_steps") or []
    return Answer(
        question, db, program, fields, pretty_sql(sql, source.dialect), execution, chart,
        candidates_from_trace(steps if isinstance(steps, list) else [], sql, source),
    )
