"""Metrics for evaluation and for DSPy optimizers, chosen by name with :func:`make_metric`.

Scorers, each giving a score in [0, 1] and feedback lines:

* ``execution``: the predicted and the gold SQL run read-only; their results compared as multisets
  (as lists when the gold query orders its output), column order ignored as in Spider's test-suite
  evaluation. :class:`ExecutionComparison` also reports a
  relaxed match, for reports only: the same rows when one side selects extra columns.
* ``verifier``: reference-free, no model call: the shipped verifier's probability that the answer's query is right
  (``programs/agents/verifier.py``), with the findings of its lints as feedback.
* ``judge``: the V2 agent's judge, reference-free (question, query, and what the query returned).
* ``judge-gold``: the judge-reward judge, the query against the gold SQL.

Names combine with ``+`` (``verifier+execution``), the scores averaged. A :class:`Metric` follows
the optimizers' conventions: a float when ``trace`` is None, a bool (score >= threshold) when
bootstrapping, and ``dspy.Prediction(score, feedback)`` for GEPA's five-argument calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import dspy

from text2sql_dspy.optimize.reward import judge_against_reference, judge_lm
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.verifier import load_verifier
from text2sql_dspy.programs.db.dialect import TranspileError, transpile_gold
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.query.results import Scoring, columns_subset_match, facts_of, is_ordered, results_match
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.signatures import JudgeAgainstReference, JudgeSQL

DEFAULT_THRESHOLD = 0.7


@dataclass(frozen=True)
class ExecutionComparison:
    """The facts of one execution comparison, kept for feedback and reports."""

    match: bool
    relaxed_match: bool = False
    pred_error: str | None = None
    gold_error: str | None = None
    pred_rows: int = 0
    gold_rows: int = 0

    def describe(self) -> str:
        if self.match:
            return "the query returns the expected rows"
        if self.relaxed_match:
            return "the query returns the expected rows, with other columns than expected"
        if self.gold_error:
            return f"the gold query failed: {self.gold_error}"
        if self.pred_error:
            return f"the query failed to execute: {self.pred_error}"
        return (f"the query returns {self.pred_rows} rows; the expected result has {self.gold_rows} rows, "
                "or other values")


def compare_execution(pred_sql: str, gold_sql: str, db_path: str, scoring: Scoring = Scoring.SPIDER
                      ) -> ExecutionComparison:
    """Execute both queries on ``db_path`` (read-only) and compare their results by ``scoring``'s rule.

    The gold query is SQLite (Spider's convention); on another engine it runs transpiled (:func:`transpile_gold`).
    """
    source = open_source(db_path)
    database = source.database
    try:
        gold_query = transpile_gold(gold_sql, database.dialect, source.column_names)
    except TranspileError as exc:
        return ExecutionComparison(False, gold_error=str(exc))
    gold = database.execute(gold_query, max_rows=100_000, timeout_s=30)
    if not gold.ok:
        return ExecutionComparison(False, gold_error=gold.error)
    if not pred_sql or not pred_sql.strip():
        return ExecutionComparison(False, pred_error="empty query", gold_rows=len(gold.rows))
    pred = database.execute(pred_sql, max_rows=100_000, timeout_s=30)
    if not pred.ok:
        return ExecutionComparison(False, pred_error=pred.error, gold_rows=len(gold.rows))
    ordered = is_ordered(gold_sql)
    match = results_match(pred, gold, ordered=ordered, scoring=scoring)
    relaxed = match or columns_subset_match(pred, gold, ordered=ordered, scoring=scoring)
    return ExecutionComparison(match, relaxed, pred_rows=len(pred.rows), gold_rows=len(gold.rows))


# Bumped whenever the comparison below changes meaning: records scored by an older one are scored again.
# 2: column order ignored (Spider's test-suite evaluation); 1: columns compared in order.
COMPARISON_VERSION = 2


def predicted_sql(pred: Any) -> str:
    """The query a program's prediction answers with (``pred.answer.sql``); "" for none."""
    answer = pred.get("answer") if hasattr(pred, "get") else getattr(pred, "answer", None)
    value = getattr(answer, "sql", "")
    return value if isinstance(value, str) else ""


def _gold_sql(example: Any, metric: str) -> str:
    gold = example.get("gold_sql") if hasattr(example, "get") else None
    if not gold:
        raise ConfigurationError(f"metric {metric!r} needs gold SQL on every example; use 'judge' for data without it.")
    return gold


# --------------------------------------------------------------------------- scorers


@dataclass(frozen=True)
class Score:
    """A score in [0, 1] and the facts behind it, in words (GEPA's feedback)."""

    value: float
    feedback: list[str] = field(default_factory=list)


Scorer = Callable[[Any, Any], Score]


def score_execution(example: Any, pred: Any) -> Score:
    """1.0 when the predicted query returns the gold query's rows."""
    comparison = compare_execution(predicted_sql(pred), _gold_sql(example, "execution"), example.db_path)
    return Score(float(comparison.match), [f"Execution: {comparison.describe()}."])


class _CachedJudge:
    """A judge scorer: its own predictor and LM, one judge call per distinct (question, query)."""

    def __init__(self, lm: Any):
        self.lm = lm
        self._cache: dict[tuple[str, ...], Score] = {}
        self._lock = threading.Lock()

    def __call__(self, example: Any, pred: Any) -> Score:
        sql = predicted_sql(pred)
        if not sql.strip():
            return Score(0.0, ["The program returned no query."])
        key = self._key(example, sql)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        score = self._score(example, pred, sql)
        with self._lock:
            self._cache[key] = score
        return score

    def _key(self, example: Any, sql: str) -> tuple[str, ...]:
        return (str(example.get("db_path")), str(example.get("question")), sql)

    def _score(self, example: Any, pred: Any, sql: str) -> Score:
        raise NotImplementedError


class JudgeScorer(_CachedJudge):
    """The reference-free judge: does the (valid) query answer the question? Invalid queries score 0."""

    def __init__(self, lm: Any):
        super().__init__(lm)
        self.predictor = dspy.Predict(JudgeSQL)

    def _score(self, example: Any, pred: Any, sql: str) -> Score:
        source = open_source(example.db_path)
        validation = source.validator.validate(sql)
        if not validation.valid:
            return Score(0.0, ["The query is invalid: " + "; ".join(validation.errors)])
        execution = facts_of(source.database.execute(validation.sql)) if source.database is not None else None
        verdict = judge_sql(
            self.predictor, self.lm, question=example.question, sql=validation.sql,
            execution_result=execution.render() if execution is not None else "(not run: no database)",
        )
        feedback = [f"Judge score {verdict.correctness_score:.2f}."]
        feedback += [f"Issue: {issue}" for issue in verdict.issues]
        feedback += [f"Fix: {fix}" for fix in verdict.suggestions]
        return Score(verdict.correctness_score, feedback)


class ReferenceJudgeScorer(_CachedJudge):
    """The judge-reward judge: the query scored against the gold SQL."""

    def __init__(self, lm: Any):
        super().__init__(lm)
        self.predictor = dspy.Predict(JudgeAgainstReference)

    def _score(self, example: Any, pred: Any, sql: str) -> Score:
        verdict = judge_against_reference(sql, _gold_sql(example, "judge-gold"), self.lm, self.predictor)
        note = f"Judge against the gold query: {verdict.reward:.2f}."
        return Score(verdict.reward, [note] + ([f"Judge reply unusable: {verdict.error}"] if verdict.error else []))


# --------------------------------------------------------------------------- the metric


@dataclass(frozen=True)
class Metric:
    """Scorers averaged into one metric that speaks every optimizer's convention (see the module doc)."""

    name: str
    scorers: tuple[Scorer, ...]
    threshold: float = DEFAULT_THRESHOLD
    always_feedback: bool = False
    # called as observer(example, pred, {scorer name: score}, mean score) on every scored call (see TraceAudit)
    observer: Callable[[Any, Any, dict[str, float], Score], None] | None = None

    @property
    def parts(self) -> tuple[str, ...]:
        """The scorers' names, in order (``judge+execution`` -> ``("judge", "execution")``)."""
        return tuple(part.strip() for part in self.name.split("+"))

    def score(self, example: Any, pred: Any) -> Score:
        """The mean score and all feedback; a missing prediction scores 0."""
        if pred is None:
            parts, result = [Score(0.0) for _ in self.scorers], Score(0.0, ["The program failed and returned nothing."])
        else:
            parts = [scorer(example, pred) for scorer in self.scorers]
            result = Score(sum(p.value for p in parts) / len(parts), [line for p in parts for line in p.feedback])
        if self.observer is not None:
            self.observer(example, pred, {name: p.value for name, p in zip(self.parts, parts)}, result)
        return result

    def __call__(
        self, example: Any, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None
    ) -> float | bool | dspy.Prediction:
        result = self.score(example, pred)
        if self.always_feedback or pred_name is not None or pred_trace is not None:
            return dspy.Prediction(score=result.value, feedback="\n".join(result.feedback))
        if trace is not None:
            return result.value >= self.threshold
        return result.value

    def for_gepa(self) -> Metric:
        """This metric returning ``Prediction(score, feedback)`` on every call, as GEPA wants."""
        return replace(self, always_feedback=True)


SCORERS = ("execution", "verifier", "judge", "judge-gold")


def score_verifier(example: Any, pred: Any) -> Score:
    """The verifier's probability that the predicted answer is right: of its chosen reading, which the program ran
    (a query it did not run, or none, scores 0), from what the program recorded, without a gold query."""
    verifier = load_verifier()
    answer = pred.get("answer") if hasattr(pred, "get") else getattr(pred, "answer", None)
    chosen = answer.chosen if answer is not None else None
    if verifier is None:
        raise ConfigurationError("the 'verifier' metric needs the verifier shipped in the package; reinstall it.")
    if chosen is None or chosen.preview is None or not answer.sql:
        return Score(0.0, ["The program returned no query that ran."])
    groups = max(1, sum(1 for r in answer.readings if r.preview is not None))
    p = verifier.probability(chosen, answer.question, drafts=answer.drafts, groups=groups)
    return Score(p, [f"Verifier: P(right) {p:.2f}."] + [f"Check: {f.message}" for f in answer.noted])


def make_metric(name: str, *, judge_model: Any = None, threshold: float = DEFAULT_THRESHOLD) -> Metric:
    """The metric called ``name``: one of :data:`SCORERS`, or several joined by ``+``.

    ``judge_model`` is a ``dspy.LM`` or a model string for the judge scorers (default: the judge's
    environment variables, else the embedded model). A misconfigured judge fails here, before any run.
    """
    parts = [part.strip() for part in name.split("+")]
    unknown = [p for p in parts if p not in SCORERS]
    if unknown or not parts:
        raise ConfigurationError(f"unknown metric {name!r}: use {', '.join(SCORERS)}, or several joined by '+'.")
    lm = judge_lm(judge_model) if any(p.startswith("judge") for p in parts) else None
    build = {"execution": lambda: score_execution, "verifier": lambda: score_verifier, "judge": lambda: JudgeScorer(lm),
             "judge-gold": lambda: ReferenceJudgeScorer(lm)}
    return Metric(name, tuple(build[p]() for p in parts), threshold)


execution_match = Metric("execution", (score_execution,))
"""1.0 when the predicted query returns the gold query's rows, else 0.0 (a bool when ``trace`` is set)."""
