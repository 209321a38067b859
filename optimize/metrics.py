"""Metrics for evaluation and for DSPy optimizers.

``execution_match(example, pred, trace=None)`` runs the predicted and the gold SQL read-only and
compares their results as multisets (as lists when the gold query orders its output). It returns
a float, or a bool when ``trace`` is not None (BootstrapFewShot's convention).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from programs.database import QueryResult
from programs.source import open_source


@dataclass(frozen=True)
class ExecutionComparison:
    """The facts of one execution comparison, kept for feedback and reports."""

    match: bool
    pred_error: str | None = None
    gold_error: str | None = None
    pred_rows: int = 0
    gold_rows: int = 0

    def describe(self) -> str:
        if self.match:
            return "the query returns the expected rows"
        if self.gold_error:
            return f"the gold query failed: {self.gold_error}"
        if self.pred_error:
            return f"the query failed to execute: {self.pred_error}"
        return f"the query returns {self.pred_rows} rows; the expected result has {self.gold_rows} rows, or other values"


def compare_execution(pred_sql: str, gold_sql: str, db_path: str) -> ExecutionComparison:
    """Execute both queries on ``db_path`` (read-only) and compare their results."""
    database = open_source(db_path).database
    gold = database.execute(gold_sql, max_rows=100_000, timeout_s=30)
    if not gold.ok:
        return ExecutionComparison(False, gold_error=gold.error)
    if not pred_sql or not pred_sql.strip():
        return ExecutionComparison(False, pred_error="empty query", gold_rows=len(gold.rows))
    pred = database.execute(pred_sql, max_rows=100_000, timeout_s=30)
    if not pred.ok:
        return ExecutionComparison(False, pred_error=pred.error, gold_rows=len(gold.rows))
    match = results_match(pred, gold, ordered=is_ordered(gold_sql))
    return ExecutionComparison(match, pred_rows=len(pred.rows), gold_rows=len(gold.rows))


def results_match(pred: QueryResult, gold: QueryResult, *, ordered: bool) -> bool:
    """Same rows (values normalised), in the same order when ``ordered``; column names are ignored."""
    pred_rows = [_normalise_row(r) for r in pred.rows]
    gold_rows = [_normalise_row(r) for r in gold.rows]
    if ordered:
        return pred_rows == gold_rows
    return Counter(pred_rows) == Counter(gold_rows)


def is_ordered(sql: str) -> bool:
    """True when the outermost query has an ORDER BY."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return False
    return tree.args.get("order") is not None if isinstance(tree, exp.Query) else False


def execution_match(example: Any, pred: Any, trace: Any = None) -> float | bool:
    """1.0 when the predicted query returns the gold query's result, else 0.0 (a bool when ``trace`` is set)."""
    comparison = compare_execution(_pred_sql(pred), example.gold_sql, example.db_path)
    return comparison.match if trace is not None else float(comparison.match)


def _pred_sql(pred: Any) -> str:
    value = pred.get("query") if hasattr(pred, "get") else getattr(pred, "query", "")
    return value or ""


def _normalise_row(row: tuple) -> tuple:
    return tuple(_normalise_value(v) for v in row)


def _normalise_value(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 6)
    return value
