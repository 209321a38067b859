"""The agents' four tools, as Python: each takes the question's state and returns a result object.

:class:`Tools` binds the tools to one question's :class:`~.state.AgentState`; its method
docstrings are what the agent's LM reads. A tool never raises for a bad call: a spent budget or a
missing precondition is a :class:`Refusal`. Every result renders itself as text (``render()``),
which only the ReAct loop's observations use; the agent's fixed moves read the objects.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import dspy

from text2sql_dspy.programs.agents.state import AgentState
from text2sql_dspy.programs.agents.thresholds import ACCEPT_SCORE, LOW_SCORE
from text2sql_dspy.programs.query.describe import describe_query
from text2sql_dspy.programs.query.query_warnings import keys_shown
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.retrieval.retriever import render_hits
from text2sql_dspy.signatures import LLMJudgeOutput

__all__ = ["JUDGE_TOOL", "Refusal", "Retrieval", "Submission", "Tools", "Verdict", "combined_confidence", "tool_specs"]

JUDGE_TOOL = "llm_judge_evaluate"
TOOL_ORDER = ("retrieve_tables", "validate_sql", JUDGE_TOOL, "submit_answer")  # as the agent's instructions list them
FAILED_VALIDATION_CAP = 0.3
# (lowest judge score, confidence band): the V2 card's confidence table for a structurally valid query
CONFIDENCE_BANDS = [(0.9, (0.9, 1.0)), (0.7, (0.7, 0.9)), (0.5, (0.5, 0.7)), (0.0, (0.3, 0.5))]


@dataclass(frozen=True)
class Refusal:
    """A tool declined: a spent budget, a missing precondition, an unknown tool or bad arguments."""

    message: str

    def render(self) -> str:
        return self.message


@dataclass(frozen=True)
class Retrieval:
    """Tables found for a search, rendered as CREATE TABLE schemas."""

    tables: list[str]
    text: str

    def render(self) -> str:
        return self.text


@dataclass(frozen=True)
class Verdict:
    """The judge's verdict on a validated query."""

    verdict: LLMJudgeOutput

    def render(self) -> str:
        """Status, score bar, issues, suggestions, reasoning, and what to do next."""
        verdict = self.verdict
        status = "CORRECT" if verdict.is_correct and verdict.correctness_score >= ACCEPT_SCORE else "NEEDS IMPROVEMENT"
        filled = int(round(verdict.correctness_score * 10))
        lines = [
            f"Semantic evaluation: {status}",
            f"Score: [{'#' * filled}{'.' * (10 - filled)}] {verdict.correctness_score:.0%}",
            "Issues: " + ("; ".join(verdict.issues) or "none"),
            "Suggestions: " + ("; ".join(verdict.suggestions) or "none"),
            f"Reasoning: {verdict.reasoning or '(none given)'}",
        ]
        if verdict.correctness_score < LOW_SCORE:
            lines.append(
                "The query is structurally valid but does not answer the question. Re-read the question, "
                "check every filter and its value, and check that you used the right table."
            )
        elif verdict.correctness_score >= ACCEPT_SCORE:
            lines.append("Both validations passed: submit this query.")
        return "\n".join(lines)


@dataclass(frozen=True)
class Submission:
    """An answer accepted (``answer`` set) or sent back with the validator's findings."""

    answer: dict[str, Any] | None
    validation: ValidationResult

    def render(self) -> str:
        if self.answer is not None:
            return "Answer submitted."
        return "Submission refused, the query is invalid:\n" + self.validation.render()


class Tools:
    """The tools of one question. The agent sees the methods named in :data:`TOOL_ORDER`."""

    def __init__(self, state: AgentState):
        self.state = state

    def retrieve_tables(self, query: str, top_k: int = 5) -> Retrieval | Refusal:
        """Search the database for tables relevant to `query` (words about the data you need).
        Returns CREATE TABLE schemas with relevance scores, plus tables needed to join them.
        Use it when the schemas you have lack a table or column the question needs."""
        state = self.state
        if state.retrieval_calls >= state.limits.max_retrieval_calls:
            return Refusal(
                f"Retrieval limit reached ({state.limits.max_retrieval_calls} calls). Work with the tables you already have."
            )
        state.retrieval_calls += 1
        hits = state.retriever.search(str(query), max(1, min(int(top_k or state.top_k), 10)))
        state.note_tables([hit.name for hit in hits])
        return Retrieval([hit.name for hit in hits], state.source.with_header(render_hits(state.source.catalog, hits)))

    def validate_sql(self, query: str) -> ValidationResult | Refusal:
        """Check a SQL query before submitting it: syntax, that every table and column exists
        (with 'did you mean' suggestions and the real columns), that it only reads data,
        and that it runs on the database. Call it with your full query."""
        state = self.state
        sql = clean_sql(str(query))
        known = state.validation_of(sql)
        if known is not None:
            return known
        if state.validation_attempts >= state.limits.max_validation_attempts:
            return Refusal(
                f"Validation limit reached ({state.limits.max_validation_attempts} attempts). "
                "Submit your best valid query now."
            )
        state.validation_attempts += 1
        emit("checking", sql=sql)
        result = state.source.validator.validate(sql)
        if result.valid:  # what the validator cannot know without the question
            keys = keys_shown(sql, state.source.catalog, state.question, state.source.dialect)
            result = replace(result, warnings=[*result.warnings, *keys]) if keys else result
        state.validations.append(result)
        if state.judge_scores and state.judge_scores[-1] < ACCEPT_SCORE:
            state.semantic_corrections += 1  # a new query written after the judge found fault
        return result

    def llm_judge_evaluate(self, query: str, explanation: str = "") -> Verdict | Refusal:
        """Ask an impartial judge whether `query` actually answers the question: the query is run
        read-only and the judge reads its result (right rows, columns, filters, grouping, ordering).
        Use it after validate_sql passes. Returns a score, the issues found and how to fix them."""
        state = self.state
        sql = clean_sql(str(query))
        validation = state.validation_of(sql)
        if validation is None or not validation.valid:
            return Refusal("Fix structural issues first: call validate_sql with this query and make it pass.")
        if not state.judge_available():
            return Refusal("The judge is unavailable; rely on validate_sql and submit when it passes.")
        if state.judge_should_stop():
            return Refusal("Judge limit reached or the score stopped improving. Submit your best query now with submit_answer.")
        verdict = judge(state, sql)
        if verdict is None:
            return Refusal("The judge is unavailable; rely on validate_sql and submit when it passes.")
        return Verdict(verdict)

    def submit_answer(self, query: str, explanation: str, confidence: float) -> Submission:
        """Submit the final SQL query with a one-sentence explanation and your confidence (0.0-1.0).
        The query is validated once more; an invalid query is sent back with its errors."""
        state = self.state
        sql = clean_sql(str(query))
        checked = self.validate_sql(sql)
        if isinstance(checked, Refusal):
            checked = state.source.validator.validate(sql)  # a spent budget never waives the read-only rule
        budget_left = state.validation_attempts < state.limits.max_validation_attempts
        if not checked.valid and (checked.dangerous or budget_left):
            return Submission(None, checked)
        agent_confidence = _as_confidence(confidence, state.draft_confidence)
        judge_score = None
        if checked.valid and state.judge is not None:
            verdict = state.judge_of(sql) or (None if state.judge_should_stop() else judge(state, sql))
            judge_score = None if verdict is None else verdict.correctness_score
        state.final_answer = {
            "query": sql,
            "explanation": str(explanation or "") or describe_query(sql, state.source.dialect),
            "confidence": combined_confidence(agent_confidence, checked, judge_score),
            "agent_confidence": agent_confidence,
            "judge_score": judge_score,
            "valid": checked.valid,
        }
        return Submission(state.final_answer, checked)


def judge(state: AgentState, sql: str) -> LLMJudgeOutput | None:
    """One judge call on a validated query, recorded; None when the judge is absent or its LM failed."""
    if not state.judge_available():
        return None
    state.judge_calls += 1
    try:
        verdict = state.judge(question=state.question, sql=sql, execution_result=state.execution_facts(sql).render())
    except Exception as exc:  # any failure of the judge's LM degrades V2 to V1, recorded in the result
        state.judge_errors.append(f"{type(exc).__name__}: {exc}")
        return None
    state.verdicts.append((sql, verdict))
    return verdict


def tool_specs(with_judge: bool) -> list[dspy.Tool]:
    """The tools as the agent's LM sees them (name, description, arguments), in :data:`TOOL_ORDER`."""
    names = [n for n in TOOL_ORDER if with_judge or n != JUDGE_TOOL]
    specs = []
    for name in names:
        spec = dspy.Tool(getattr(Tools, name))
        for table in (spec.args, spec.arg_types):
            table.pop("self", None)  # the question's state is bound at run time, never the LM's to give
        specs.append(spec)
    return specs


def combined_confidence(agent_confidence: float, validation: ValidationResult | None, judge_score: float | None) -> float:
    """The answer's confidence.

    V1 (no judge score): the agent's own confidence, capped at 0.3 unless the query validated.
    V2: ``0.4 * agent + 0.6 * judge``, kept inside the V2 card's band for that judge score when the
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


def _as_confidence(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
