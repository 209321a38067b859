"""What one question's answer is made of: its budgets, its database, its judge, and the record of every check.

An :class:`AgentState` is made fresh for every question, so nothing is shared between questions
or threads. The tools (:mod:`.tools`) read and fill it; the agent (:mod:`.react`) reads it to
decide its next move and to build the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.execution_facts import ExecutionFacts, facts_of
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.retrieval.retriever import TableRetriever, make_retriever
from text2sql_dspy.signatures import LLMJudgeOutput

__all__ = ["AgentState", "Judge", "Limits"]

# judge(question=..., sql=..., execution_result=...) -> verdict; raises when the judge's LM fails
Judge = Callable[..., LLMJudgeOutput]


@dataclass(frozen=True)
class Limits:
    """Per-question budgets (the V2 card's configuration defaults)."""

    max_iterations: int = 10
    max_retrieval_calls: int = 3
    max_validation_attempts: int = 4
    max_judge_calls: int = 3


@dataclass
class AgentState:
    """One question: the inputs the tools need, and what happened while answering it."""

    question: str
    source: DataSource
    limits: Limits = field(default_factory=Limits)
    judge: Judge | None = None  # None: V1, structural checks only
    retrieval_type: str = "semantic"
    top_k: int = 5
    retriever_given: TableRetriever | None = None

    iteration: int = 0
    retrieval_calls: int = 0
    retrieved_tables: list[str] = field(default_factory=list)
    validation_attempts: int = 0
    validations: list[ValidationResult] = field(default_factory=list)
    verdicts: list[tuple[str, LLMJudgeOutput]] = field(default_factory=list)  # (query, verdict), in call order
    judge_calls: int = 0
    judge_errors: list[str] = field(default_factory=list)
    semantic_corrections: int = 0  # queries validated after the judge found fault
    candidate_queries: set[str] = field(default_factory=set)  # alternatives judged side by side, not revisions
    candidate_count: int = 1
    agreement: float | None = None
    draft_confidence: float = 0.5  # the latest draft's own token confidence
    final_answer: dict[str, Any] | None = None
    executions: dict[str, QueryResult] = field(default_factory=dict)
    votes: dict[str, int] = field(default_factory=dict)  # drafted query -> drafts that wrote it
    alternatives: list[str] = field(default_factory=list)  # two readings too close to choose between, best first

    @cached_property
    def retriever(self) -> TableRetriever:
        """The table retriever, built on first use (the semantic one loads an embedding model)."""
        return self.retriever_given or make_retriever(self.source.catalog, self.retrieval_type)

    def note_tables(self, tables: list[str]) -> None:
        """Record tables the agent has seen (the prompt's own count as the first retrieval)."""
        for name in tables:
            if name not in self.retrieved_tables:
                self.retrieved_tables.append(name)

    def validation_of(self, sql: str) -> ValidationResult | None:
        """The latest validation of exactly this (cleaned) query, if any."""
        return next((v for v in reversed(self.validations) if v.sql == sql), None)

    def judge_of(self, sql: str) -> LLMJudgeOutput | None:
        """The latest verdict on exactly this query, if any."""
        return next((v for q, v in reversed(self.verdicts) if q == sql), None)

    @property
    def judge_scores(self) -> list[float]:
        return [v.correctness_score for _, v in self.verdicts]

    @property
    def judge_degraded(self) -> bool:
        """True once the judge's LM failed: from then on the agent works as V1."""
        return bool(self.judge_errors)

    def judge_available(self) -> bool:
        return self.judge is not None and not self.judge_degraded

    def judge_should_stop(self) -> bool:
        """The V2 card's loop prevention: stop at the budget, or when the last revision's score did not improve.

        The opening's candidates (``candidate_queries``) are alternatives judged side by side, not
        revisions: only the budget limits them.
        """
        if self.judge_calls >= self.limits.max_judge_calls:
            return True
        revisions = [v.correctness_score for q, v in self.verdicts if q not in self.candidate_queries]
        return len(revisions) >= 2 and revisions[-1] <= revisions[-2]

    def execute(self, sql: str) -> QueryResult:
        """Run ``sql`` read-only, once per question (the result is kept for grouping and judging)."""
        if sql not in self.executions:
            emit("running", sql=sql)
            database = self.source.database
            self.executions[sql] = (
                database.execute(sql) if database is not None else QueryResult(error="no database to run the query on")
            )
        return self.executions[sql]

    def execution_facts(self, sql: str) -> ExecutionFacts:
        return facts_of(self.execute(sql))
