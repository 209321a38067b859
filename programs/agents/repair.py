"""The repair loop: a stock ``dspy.ReAct`` over the drafting signature, for a question whose drafts found no valid
query.

The loop is built once per program (:func:`repair_agent`), so optimizers find and tune its ``react`` and
``extract`` predictors. Each call gets the question's tools as closures in a dict of its own (:func:`repair`):
each returns an :class:`Observation`, the text the loop's LM reads that also carries the result object. The
agent reads the results back from the trajectory ReAct returns and keeps them; the tools share nothing with it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import dspy

from text2sql_dspy.programs.agents.record import Record
from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.query.rename import renamed
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.query.results import facts_of
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.programs.retrieval.schema_view import SchemaView
from text2sql_dspy.signatures import DraftSQL, LLMJudgeOutput

__all__ = ["Observation", "bound_tools", "repair", "repair_agent", "step_limit_reached"]

JUDGE_TOOL = "llm_judge_evaluate"


def step_limit_reached(steps: int) -> str:
    """Why the loop ended without an answer when it took all its ``steps`` (none, where it is off)."""
    return f"repair step limit reached ({steps} agent steps)"


# The tools as the loop's LM sees them: names, arguments and descriptions. :func:`repair` binds them per call.
def retrieve_tables(query: str, top_k: int = 5) -> str:
    """Search the database for tables relevant to `query` (words about the data you need).
    Returns CREATE TABLE schemas with relevance scores, plus tables needed to join them.
    Use it when the schemas you have lack a table or column the question needs."""
    raise NotImplementedError  # a spec: repair() binds the question's own


def validate_sql(query: str) -> str:
    """Check a SQL query: syntax, that every table and column exists (with 'did you mean' suggestions
    and the real columns), that it only reads data, and that it runs on the database. Call it with your full query;
    when it passes, call finish."""
    raise NotImplementedError


def llm_judge_evaluate(query: str) -> str:
    """Ask an impartial judge whether `query` answers the question: the query is run read-only and the judge
    reads its result. Use it after validate_sql passes. Returns the judge's probability that it is right and
    the issues it found."""
    raise NotImplementedError


@dataclass(frozen=True)
class Refusal:
    """A tool declined: a spent budget or a missing precondition."""

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
class Judged:
    """The judge's judgment of a query, and the result it read."""

    sql: str
    judgment: LLMJudgeOutput
    result: QueryResult

    def render(self) -> str:
        issues = "; ".join(self.judgment.issues) or "none"
        return f"P(right) = {self.judgment.correctness_score:.2f}. Issues: {issues}"


@dataclass(frozen=True)
class JudgeFailed:
    """The judge's LM failed: from then on the agent works as V1."""

    error: str

    def render(self) -> str:
        return f"The judge is unavailable ({self.error}); call finish when validate_sql passes."


class Lenient:
    """A predictor of the loop whose malformed reply (:data:`~.recovery.MALFORMED_REPLY_ERRORS`) ends the loop the way
    ReAct ends it on a bad tool choice (a ``ValueError``, which it catches), or, given ``empty``, gives those output
    fields empty; ``errors`` keeps why."""

    def __init__(self, predictor: Any, empty: dict[str, Any] | None = None):
        self.predictor, self.empty, self.errors = predictor, empty, []

    def __call__(self, **inputs: Any) -> dspy.Prediction:
        pred, error = predict_or_error(self.predictor, **inputs)
        if pred is not None:
            return pred
        self.errors.append(error)
        if self.empty is None:
            raise ValueError(error)
        return dspy.Prediction(**self.empty)


class Observation(str):
    """A tool's result as the loop's LM reads it (its rendering), carrying the result object (``.result``)."""

    result: Any

    def __new__(cls, result: Any) -> Observation:
        text = super().__new__(cls, result.render())
        text.result = result
        return text


def repair_agent(with_judge: bool, max_iters: int) -> dspy.ReAct:
    """The loop, with the tools' specs (their closures are bound per call)."""
    specs = [retrieve_tables, validate_sql, *([llm_judge_evaluate] if with_judge else [])]
    return dspy.ReAct(DraftSQL, tools=specs, max_iters=max_iters)


def repair(agent: dspy.ReAct, record: Record, view: SchemaView, steps: int, *,
           retrieval_type: str = "semantic") -> tuple[str, str | None]:
    """Run ``agent`` for up to ``steps`` steps with the question's tools, keep what they found in ``record``, and
    return the query its extract step wrote (cleaned; "" for none) and why the loop gave none, if it did."""
    loop = copy.copy(agent)
    loop.tools = {**bound_tools(agent, record, retrieval_type, view.renamed), "finish": agent.tools["finish"]}
    loop.react = react = Lenient(agent.react)
    loop.extract = extract = Lenient(agent.extract, empty={"reasoning": "", "sql": ""})
    pred, error = predict_or_error(loop, question=record.question, table_schemas=view.text, facts=view.facts,
                                   hints="", max_iters=steps)
    if pred is None:
        return "", error
    _keep(record, pred.trajectory)
    sql = clean_sql(str(pred.get("sql") or ""))
    if sql:
        return record.source.runnable(sql, view.renamed), None
    errors = [*react.errors, *extract.errors]
    return "", errors[0] if errors else step_limit_reached(steps)


def bound_tools(agent: dspy.ReAct, record: Record, retrieval_type: str,
                shown: Mapping[str, str] = MappingProxyType({})) -> dict[str, dspy.Tool]:
    """The question's tools, within what is left of its budgets; they read ``record``'s inputs, never write it. A
    query's tables that the prompt ``shown`` under other names are renamed to the stored ones first."""
    limits, source, question = record.limits, record.source, record.question
    left = {"retrievals": limits.max_retrieval_calls - record.retrievals,
            "validations": record.attempts_left,
            "judge": limits.max_judge_calls - record.judge_calls}
    known = dict(record.checks)

    def retrieve(query: str, top_k: int = 5) -> Observation:
        if left["retrievals"] <= 0:
            return Observation(Refusal("Retrieval limit reached. Work with the tables you already have."))
        left["retrievals"] -= 1
        from text2sql_dspy.programs.retrieval.retriever import make_retriever, render_hits

        hits = make_retriever(source.catalog, retrieval_type).search(str(query), max(1, min(int(top_k or 5), 10)))
        return Observation(Retrieval([h.name for h in hits], source.with_header(render_hits(source.catalog, hits))))

    def validate(query: str) -> Observation:
        sql = renamed(clean_sql(str(query)), shown, source.dialect)
        if sql not in known:
            if left["validations"] <= 0:
                return Observation(Refusal("Validation limit reached. Call finish with your best valid query."))
            left["validations"] -= 1
            emit("checking", sql=sql)
            known[sql] = source.validator.validate(sql, question=question, previous=record.previous)
        return Observation(known[sql])

    def judge(query: str) -> Observation:
        sql = renamed(clean_sql(str(query)), shown, source.dialect)
        if sql not in known or not known[sql].valid:
            return Observation(Refusal("Call validate_sql with this query and make it pass first."))
        if left["judge"] <= 0 or not record.judge_available:
            return Observation(Refusal("The judge is not available now; call finish when validate_sql passes."))
        left["judge"] -= 1
        result = source.database.execute(sql) if source.database is not None else QueryResult(error="no database")
        try:
            verdict = record.judge(question=question, sql=sql, execution_result=facts_of(result).render())
        except Exception as exc:  # the judge's LM failed: the agent carries on as V1 (see _keep)
            left["judge"] = 0
            return Observation(JudgeFailed(f"{type(exc).__name__}: {exc}"))
        return Observation(Judged(sql, verdict, result))

    bound = {"retrieve_tables": retrieve, "validate_sql": validate, JUDGE_TOOL: judge}
    specs = {"retrieve_tables": retrieve_tables, "validate_sql": validate_sql, JUDGE_TOOL: llm_judge_evaluate}
    return {name: dspy.Tool(functools.wraps(specs[name])(bound[name])) for name in agent.tools if name in bound}


def _keep(record: Record, trajectory: dict[str, Any]) -> None:
    """Record each step of the loop, and the validations, verdicts and tables its tools returned."""
    for i in sorted(int(key.removeprefix("tool_name_")) for key in trajectory if key.startswith("tool_name_")):
        tool, args = trajectory[f"tool_name_{i}"], trajectory.get(f"tool_args_{i}") or {}
        observation = trajectory.get(f"observation_{i}", "")
        result = getattr(observation, "result", None)
        record.repair_steps += 1
        if isinstance(result, ValidationResult):
            record.keep(result)
        elif isinstance(result, Judged):
            record.judge_calls += 1
            record.runs.setdefault(result.sql, result.result)
            record.keep_judgment(result.sql, result.judgment, step=False)
        elif isinstance(result, JudgeFailed):
            record.judge_calls += 1
            record.judge_errors.append(result.error)
        elif isinstance(result, Retrieval):
            record.retrievals += 1
            record.tables.extend(t for t in result.tables if t not in record.tables)
        query = args.get("query", "") if isinstance(args, dict) else ""
        record.step(tool, str(query), str(observation), thought=str(trajectory.get(f"thought_{i}", "")))
