"""The agents' tools and the per-question state they fill in.

A :class:`Toolbox` is made fresh for every question, so tools never share state between questions
or threads. Its methods are the tools; their docstrings are what the agent reads. Each tool
enforces its own budget and answers with an observation string, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import dspy

from text2sql_dspy.programs.retrieval.retriever import TableRetriever, make_retriever, render_hits
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.db.execution_facts import ExecutionFacts, facts_of
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.programs.db.reply import clean_sql
from text2sql_dspy.programs.db.validator import SQLValidator, ValidationResult
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.agents.thresholds import ACCEPT_SCORE, LOW_SCORE
from text2sql_dspy.signatures import LLMJudgeOutput

FAILED_VALIDATION_CAP = 0.3
# (lowest judge score, confidence band) — the seeds' confidence table for a structurally valid query.
CONFIDENCE_BANDS = [(0.9, (0.9, 1.0)), (0.7, (0.7, 0.9)), (0.5, (0.5, 0.7)), (0.0, (0.3, 0.5))]


@dataclass
class Limits:
    """Per-question budgets (the seeds' Configuration defaults)."""

    max_iterations: int = 10
    max_retrieval_calls: int = 3
    max_validation_attempts: int = 4
    max_judge_calls: int = 3


@dataclass
class AgentState:
    """What happened while answering one question (V1)."""

    question: str
    iteration: int = 0
    retrieved_tables: list[str] = field(default_factory=list)
    generated_queries: list[str] = field(default_factory=list)
    validation_results: list[ValidationResult] = field(default_factory=list)
    reasoning_trace: list[dict[str, Any]] = field(default_factory=list)
    final_answer: dict[str, Any] | None = None
    retrieval_calls: int = 0
    validation_attempts: int = 0

    def validation_of(self, sql: str) -> ValidationResult | None:
        """The latest validation of exactly this (cleaned) query, if any."""
        return next((v for v in reversed(self.validation_results) if v.sql == sql), None)


@dataclass
class AgentStateV2(AgentState):
    """V1's state plus the judge's record."""

    judge_results: list[LLMJudgeOutput] = field(default_factory=list)
    judged_queries: list[str] = field(default_factory=list)
    judge_calls: int = 0
    judge_scores: list[float] = field(default_factory=list)
    judge_errors: list[str] = field(default_factory=list)
    semantic_corrections: int = 0
    candidate_count: int = 1
    agreement: float | None = None
    candidate_queries: set[str] = field(default_factory=set)

    @property
    def judge_degraded(self) -> bool:
        """True once the judge LM failed: from then on the agent behaves as V1."""
        return bool(self.judge_errors)

    def judge_of(self, sql: str) -> LLMJudgeOutput | None:
        return next((r for q, r in zip(reversed(self.judged_queries), reversed(self.judge_results)) if q == sql), None)

    def judge_should_stop(self, max_calls: int) -> bool:
        """The seeds' loop prevention: stop at the budget, or when the last revision's score did not improve.

        Scores of the opening's candidates (``candidate_queries``) are alternatives, not revisions:
        they are judged side by side, so only the budget limits them.
        """
        if self.judge_calls >= max_calls:
            return True
        revisions = [s for q, s in zip(self.judged_queries, self.judge_scores) if q not in self.candidate_queries]
        return len(revisions) >= 2 and revisions[-1] <= revisions[-2]


def combined_confidence(agent_confidence: float, validation: ValidationResult | None, judge_score: float | None) -> float:
    """The answer's confidence.

    V1 (no judge score): the agent's own confidence, capped at 0.3 unless the query validated.
    V2: ``0.4 * agent + 0.6 * judge``, kept inside the seeds' band for that judge score when the
    query validated, and capped at 0.3 when it did not.
    """
    agent_confidence = min(1.0, max(0.0, agent_confidence))
    valid = validation is not None and validation.valid
    if judge_score is None:
        return agent_confidence if valid else min(agent_confidence, FAILED_VALIDATION_CAP)
    combined = 0.4 * agent_confidence + 0.6 * judge_score
    if not valid:
        return min(combined, FAILED_VALIDATION_CAP)
    low, high = next(band for floor, band in CONFIDENCE_BANDS if judge_score >= floor)
    return min(high, max(low, combined))


def format_judge_observation(verdict: LLMJudgeOutput, validation: ValidationResult | None) -> str:
    """The judge's verdict as the agent sees it: status, score bar, issues, suggestions, reasoning."""
    status = "CORRECT" if verdict.is_correct and verdict.correctness_score >= ACCEPT_SCORE else "NEEDS IMPROVEMENT"
    filled = int(round(verdict.correctness_score * 10))
    lines = [
        f"Semantic evaluation: {status}",
        f"Score: [{'#' * filled}{'.' * (10 - filled)}] {verdict.correctness_score:.0%}",
        "Issues: " + ("; ".join(verdict.issues) or "none"),
        "Suggestions: " + ("; ".join(verdict.suggestions) or "none"),
        f"Reasoning: {verdict.reasoning or '(none given)'}",
    ]
    if validation is not None and validation.valid and verdict.correctness_score < LOW_SCORE:
        lines.append(
            "The query is structurally valid but does not answer the question. Re-read the question, "
            "check every filter and its value, and check that you used the right table."
        )
    elif verdict.correctness_score >= ACCEPT_SCORE:
        lines.append("Both validations passed: submit this query.")
    return "\n".join(lines)


class Toolbox:
    """The tools of one question. ``judge`` is None for V1."""

    def __init__(
        self,
        state: AgentState,
        source: DataSource,
        retriever: TableRetriever | None,
        validator: SQLValidator,
        limits: Limits,
        *,
        top_k: int = 5,
        retrieval_type: str = "semantic",
        judge: Callable[[str, str, str], LLMJudgeOutput] | None = None,
    ):
        """``judge(question, sql, execution_result)`` is V2's judge; None for V1. Without a ``retriever``,
        one of ``retrieval_type`` is built when the agent first asks for tables (not before: the
        semantic one loads an embedding model)."""
        self.state = state
        self.source = source
        self._retriever = retriever
        self.retrieval_type = retrieval_type
        self.validator = validator
        self.limits = limits
        self.top_k = top_k
        self.judge = judge
        self.agent_explanation = ""
        self.agent_confidence = 0.5
        self._executions: dict[str, QueryResult] = {}

    @cached_property
    def retriever(self) -> TableRetriever:
        return self._retriever or make_retriever(self.source.catalog, self.retrieval_type)

    @cached_property
    def tools_by_name(self) -> dict[str, dspy.Tool]:
        return {tool.name: tool for tool in self.tools()}

    def note_tables(self, tables: list[str]) -> None:
        """Record the tables the prompt shows as the question's first retrieval."""
        self.state.retrieval_calls += 1
        for name in tables:
            if name not in self.state.retrieved_tables:
                self.state.retrieved_tables.append(name)

    def execute(self, sql: str) -> QueryResult:
        """Run ``sql`` read-only once per question (the result is kept for grouping and judging)."""
        if sql not in self._executions:
            emit("running", sql=sql)
            database = self.source.database
            self._executions[sql] = (
                database.execute(sql) if database is not None else QueryResult(error="no database to run the query on")
            )
        return self._executions[sql]

    def execution_facts(self, sql: str) -> ExecutionFacts:
        return facts_of(self.execute(sql))

    def result_key(self, sql: str) -> Any:
        """What two queries share when they return the same rows (in any order, any column names); errors never match."""
        result = self.execute(sql)
        if not result.ok:
            return ("error", sql)
        return tuple(sorted((tuple(map(repr, row)) for row in result.rows)))

    def tools(self) -> list[dspy.Tool]:
        """This question's tools, in the order the agent's instructions list them."""
        funcs = [self.retrieve_tables, self.validate_sql]
        if self.judge is not None:
            funcs.append(self.llm_judge_evaluate)
        funcs.append(self.submit_answer)
        return [dspy.Tool(f) for f in funcs]

    def retrieve_tables(self, query: str, top_k: int = 5) -> str:
        """Search the database for tables relevant to `query` (words about the data you need).
        Returns CREATE TABLE schemas with relevance scores, plus tables needed to join them.
        Use it when the schemas you have lack a table or column the question needs."""
        state = self.state
        if state.retrieval_calls >= self.limits.max_retrieval_calls:
            return (
                f"Retrieval limit reached ({self.limits.max_retrieval_calls} calls). "
                "Work with the tables you already have."
            )
        state.retrieval_calls += 1
        hits = self.retriever.search(str(query), max(1, min(int(top_k or self.top_k), 10)))
        for hit in hits:
            if hit.name not in state.retrieved_tables:
                state.retrieved_tables.append(hit.name)
        return self.source.with_header(render_hits(self.source.catalog, hits))

    def validate_sql(self, query: str) -> str:
        """Check a SQL query before submitting it: syntax, that every table and column exists
        (with 'did you mean' suggestions and the real columns), that it only reads data,
        and that it runs on the database. Call it with your full query."""
        result = self._validate(query)
        return result.render() if isinstance(result, ValidationResult) else result

    def llm_judge_evaluate(self, query: str, explanation: str = "") -> str:
        """Ask an impartial judge whether `query` actually answers the question: the query is run
        read-only and the judge reads its result (right rows, columns, filters, grouping, ordering).
        Use it after validate_sql passes. Returns a score, the issues found and how to fix them."""
        state = self.state
        assert isinstance(state, AgentStateV2) and self.judge is not None
        sql = clean_sql(str(query))
        validation = state.validation_of(sql)
        if validation is None or not validation.valid:
            return "Fix structural issues first: call validate_sql with this query and make it pass."
        if state.judge_degraded:
            return "The judge is unavailable; rely on validate_sql and submit when it passes."
        if state.judge_should_stop(self.limits.max_judge_calls):
            return (
                "Judge limit reached or the score stopped improving. "
                "Submit your best query now with submit_answer."
            )
        verdict = self._judge(sql)
        if verdict is None:
            return "The judge is unavailable; rely on validate_sql and submit when it passes."
        return format_judge_observation(verdict, validation)

    def submit_answer(self, query: str, explanation: str, confidence: float) -> str:
        """Submit the final SQL query with a one-sentence explanation and your confidence (0.0-1.0).
        The query is validated once more; an invalid query is sent back with its errors."""
        state = self.state
        sql = clean_sql(str(query))
        validation = state.validation_of(sql) or self._validate(sql)
        if not isinstance(validation, ValidationResult):
            validation = None
        checked = validation or self.validator.validate(sql)  # a spent budget never waives the read-only rule
        if not checked.valid and (checked.dangerous or self._validation_budget_left()):
            return "Submission refused, the query is invalid:\n" + checked.render()
        try:
            agent_confidence = float(confidence)
        except (TypeError, ValueError):
            agent_confidence = self.agent_confidence
        judge_score = None
        if isinstance(state, AgentStateV2) and validation is not None and validation.valid:
            verdict = state.judge_of(sql)
            if verdict is None and not state.judge_degraded and not state.judge_should_stop(self.limits.max_judge_calls):
                verdict = self._judge(sql)
            judge_score = None if verdict is None else verdict.correctness_score
        state.final_answer = {
            "query": sql,
            "explanation": str(explanation or self.agent_explanation),
            "confidence": combined_confidence(agent_confidence, validation, judge_score),
            "agent_confidence": agent_confidence,
            "judge_score": judge_score,
            "valid": bool(validation and validation.valid),
        }
        return "Answer submitted."

    def _validation_budget_left(self) -> bool:
        return self.state.validation_attempts < self.limits.max_validation_attempts

    def _validate(self, query: str) -> ValidationResult | str:
        state = self.state
        sql = clean_sql(str(query))
        known = state.validation_of(sql)
        if known is not None:
            return known
        if not self._validation_budget_left():
            return (
                f"Validation limit reached ({self.limits.max_validation_attempts} attempts). "
                "Submit your best valid query now."
            )
        state.validation_attempts += 1
        emit("checking", sql=sql)
        result = self.validator.validate(sql)
        state.validation_results.append(result)
        state.generated_queries.append(result.sql)
        if isinstance(state, AgentStateV2) and state.judge_scores and state.judge_scores[-1] < ACCEPT_SCORE:
            state.semantic_corrections += 1  # a new query written after the judge found fault
        return result

    def _judge(self, sql: str) -> LLMJudgeOutput | None:
        state = self.state
        assert isinstance(state, AgentStateV2) and self.judge is not None
        state.judge_calls += 1
        try:
            verdict = self.judge(state.question, sql, self.execution_facts(sql).render())
        except Exception as exc:  # any judge failure degrades V2 to V1, recorded in the result
            state.judge_errors.append(f"{type(exc).__name__}: {exc}")
            return None
        state.judge_results.append(verdict)
        state.judged_queries.append(sql)
        state.judge_scores.append(verdict.correctness_score)
        return verdict
