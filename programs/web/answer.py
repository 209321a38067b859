"""What the page and the API show for one answer: the SQL formatted, its rows, the verdict in words.

Every query shown with rows here went through the database's validator and then its read-only
executor (:func:`run_read_only`); nothing else in the web package runs SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from pydantic import BaseModel, Field
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.answer import Answer, json_value
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.programs.verdict import level_of
from text2sql_dspy.programs.web.chart import Chart, choose_chart

MAX_ROWS = 1000  # rows fetched for the table, the chart and the CSV
SHOWN_ROWS = 20  # rows the page's table shows


@dataclass(frozen=True)
class Execution:
    """A query checked by the validator and, if it passed, run read-only."""

    sql: str
    valid: bool
    findings: str  # the validator's findings, as it renders them
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

    def shown(self, rows: int = SHOWN_ROWS) -> Rows:
        return Rows(sql=self.sql, valid=self.valid, error=self.error, columns=self.columns,
                    rows=[[json_value(v) for v in row] for row in self.rows[:rows]], row_count=len(self.rows),
                    truncated=bool(self.ok and self.result.truncated))


class Rows(BaseModel):
    """The final query's first rows as the page shows them (its validator's findings when it did not run)."""

    sql: str
    valid: bool
    error: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False


class ChartData(BaseModel):
    kind: str  # bar, line or number
    figure: dict[str, Any] | None = None  # Plotly's {data, layout}
    value: Any = None
    label: str = ""


class Reply(Answer):
    """``/api/ask``'s reply: the :class:`Answer` (its ``verdict`` in words among its fields), and where it came from,
    the SQL laid out, its rows and a chart when the result suits one."""

    job: str = ""
    db: str
    program: str
    sql_pretty: str = ""
    conversation: str = ""  # the id a follow-up sends
    turn: int = 1
    result: Rows | None = None
    chart: ChartData | None = None


def run_read_only(source: DataSource, sql: str, *, max_rows: int = MAX_ROWS) -> Execution:
    """Validate ``sql`` against ``source``; run the validator's cleaned query read-only only if it passed."""
    check = source.validator.validate(sql)
    if not check.valid or source.database is None:
        return Execution(check.sql or sql, check.valid, check.render())
    return Execution(check.sql, True, check.render(), source.database.execute(check.sql, max_rows=max_rows))


def pretty_sql(sql: str, dialect: str) -> str:
    """``sql`` laid out by sqlglot; as given when sqlglot cannot parse it."""
    if not sql.strip():
        return ""
    try:
        return ";\n".join(sqlglot.transpile(sql, read=dialect, write=dialect, pretty=True))
    except SqlglotError:
        return sql


def cell_text(value: Any) -> str:
    return "NULL" if value is None else str(json_value(value))


@dataclass
class AnswerView:
    """One answered question as the page shows it: the program's :class:`Answer`, the database and program it
    came from, the SQL laid out, the final query's rows (up to :data:`MAX_ROWS`, for the table, chart and CSV)."""

    db: str
    program: str
    answer: Answer
    sql_pretty: str
    execution: Execution | None
    chart: Chart | None
    conversation: str = ""  # the id a follow-up sends
    earlier: tuple = ()  # the conversation's turns (:class:`~...conversation.Turn`) the answer was shown
    position: int | None = None  # where the answer stands in its conversation's turns (None: it joined none)

    @property
    def turn(self) -> int:
        """Its place in the conversation, 1 for the first question."""
        return len(self.earlier) + 1

    @property
    def question(self) -> str:
        return self.answer.question

    @property
    def level(self) -> str:
        """``good``, ``warn`` or ``bad``: how the page colours the verdict (:attr:`~..answer.Answer.verdict`)."""
        return level_of(self.answer.verdict)

    def reply(self, job: str = "") -> Reply:
        """The :class:`Answer` as it is, with the database, the program, the conversation and turn, the formatted SQL,
        the result and the chart."""
        chart = self.chart
        return Reply(
            **dict(self.answer), job=job, db=self.db, program=self.program, sql_pretty=self.sql_pretty,
            conversation=self.conversation, turn=self.turn,
            result=None if self.execution is None else self.execution.shown(),
            chart=None if chart is None else ChartData(kind=chart.kind, figure=chart.figure,
                                                       value=json_value(chart.value), label=chart.label),
        )


def build_answer(db: str, program: str, answer: Answer, source: DataSource) -> AnswerView:
    """The page's view of ``answer``: the final query run read-only for its rows and a chart. The other readings
    show the previews the program kept when it ran them; nothing else is run."""
    execution = run_read_only(source, answer.sql) if answer.sql.strip() else None
    chart = choose_chart(execution.columns, execution.rows) if execution is not None and execution.ok else None
    return AnswerView(db, program, answer, pretty_sql(answer.sql, source.dialect), execution, chart)
