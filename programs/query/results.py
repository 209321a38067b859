"""When two query results are "the same": one meaning for the metric, V2's vote and its early stop.

Two results are the same when they hold the same rows, values normalised (``1`` = ``1.0``,
PostgreSQL's ``Decimal`` = SQLite's float), column names and column order ignored, as in Spider's
test-suite evaluation (Zhong, Yu and Klein, EMNLP 2020); in order when the reference query orders
its output. A failed query is the same as nothing.

A benchmark is scored as its own evaluator scores it (:class:`Scoring`): Spider (and SParC) by the rule
above; BIRD as its ``evaluation.py`` does, ``set(predicted_rows) == set(gold_rows)``: rows as sets, so
their order and duplicates are ignored, and columns in the order the gold query gives them.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any

import sqlglot
from sqlglot import exp

from text2sql_dspy.programs.db.database import QueryResult

__all__ = [
    "ExecutionFacts", "Scoring", "columns_subset_match", "facts_of", "is_ordered", "results_match", "same_result",
]


class Scoring(str, Enum):
    """Which benchmark's evaluator a predicted result is scored by, against the gold one."""

    SPIDER = "spider"  # Spider's test-suite evaluation (and SParC's): rows as a multiset, columns in any order
    BIRD = "bird"  # BIRD's evaluation.py: set(predicted_rows) == set(gold_rows)

    @property
    def description(self) -> str:
        """The rule in words, as a run's report and ``run.json`` state it."""
        if self is Scoring.BIRD:
            return "BIRD's evaluator: rows as sets (order and duplicates ignored), columns in order"
        return ("Spider's test-suite evaluation: rows as a multiset, in order when the gold query orders them, "
                "columns in any order")


def same_result(a: QueryResult, b: QueryResult) -> bool:
    """Whether two queries answered alike: both ran, and :func:`results_match` (unordered) holds."""
    return a.ok and b.ok and results_match(a, b, ordered=False)


def results_match(pred: QueryResult, gold: QueryResult, *, ordered: bool, scoring: Scoring = Scoring.SPIDER) -> bool:
    """Same rows (values normalised), by ``scoring``'s rule.

    Spider's (the default): the same multiset of rows, in the same order when ``ordered``; column names and
    column order are ignored, as in Spider's test-suite evaluation (Zhong, Yu and Klein, EMNLP 2020): the
    results match when some order of the predicted columns gives the gold rows. The number of columns must
    be the same. BIRD's: the same set of rows, columns in the same order; ``ordered`` plays no part.
    """
    pred_rows = [_normalise_row(r) for r in pred.rows]
    gold_rows = [_normalise_row(r) for r in gold.rows]
    if scoring is Scoring.BIRD:
        return set(pred_rows) == set(gold_rows)
    if len(pred_rows) != len(gold_rows):
        return False
    if not pred_rows:
        return True
    return len(pred_rows[0]) == len(gold_rows[0]) and _columns_map(pred_rows, gold_rows, list if ordered else Counter)


MAX_RELAXED_COLUMNS = 12
MAX_RELAXED_ASSIGNMENTS = 5_000


def columns_subset_match(
    pred: QueryResult, gold: QueryResult, *, ordered: bool, scoring: Scoring = Scoring.SPIDER,
) -> bool:
    """Same rows once the wider result is cut to the narrower one's columns, in any order.

    Each column of the narrower result must be a distinct column of the wider one, row for row
    (in order when ``ordered``; as sets of rows by BIRD's ``scoring``): "the top 10 actions" answered
    without the counts the gold query also selects, or with an extra id column. Too lenient to grade by;
    reported beside the strict match because gold queries often select more than their question asks for.
    """
    narrow = [_normalise_row(r) for r in pred.rows]
    wide = [_normalise_row(r) for r in gold.rows]
    if scoring is Scoring.BIRD:
        narrow, wide, bag = list(dict.fromkeys(narrow)), list(dict.fromkeys(wide)), frozenset
        if not narrow or not wide:
            return False  # two empty results already match strictly
    else:
        bag = list if ordered else Counter
        if len(narrow) != len(wide) or not narrow:
            return False  # two empty results already match strictly
    if len(narrow[0]) > len(wide[0]):
        narrow, wide = wide, narrow
    return _columns_map(narrow, wide, bag)


def _columns_map(narrow: list[tuple], wide: list[tuple], bag: Any) -> bool:
    """True when distinct columns of ``wide``, one for each column of ``narrow``, give ``narrow``'s rows, as
    ``bag`` collects them (``list``: in order; ``Counter``: a multiset; ``frozenset``: a set). Equal widths:
    some permutation of the columns."""
    target = bag(narrow)
    if len(narrow[0]) == len(wide[0]) and bag(wide) == target:
        return True  # the columns in the same order
    if len(wide[0]) > MAX_RELAXED_COLUMNS:
        return False
    wide_columns = [bag(column) for column in zip(*wide)]
    candidates = [[j for j, values in enumerate(wide_columns) if values == column] for column in map(bag, zip(*narrow))]
    if math.prod(len(c) for c in candidates) > MAX_RELAXED_ASSIGNMENTS:
        return False
    return any(
        bag(tuple(r[j] for j in chosen) for r in wide) == target
        for chosen in itertools.product(*candidates)
        if len(set(chosen)) == len(chosen)
    )


def is_ordered(sql: str) -> bool:
    """True when the outermost query has an ORDER BY."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return False
    return tree.args.get("order") is not None if isinstance(tree, exp.Query) else False



def _normalise_row(row: tuple) -> tuple:
    return tuple(_normalise_value(v) for v in row)


def _normalise_value(value: Any) -> Any:
    if isinstance(value, Decimal):  # PostgreSQL's numeric, where SQLite returns a float or an int
        value = float(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 6)
    return value


MAX_SHOWN_ROWS = 5
MAX_CELL_CHARS = 40


@dataclass(frozen=True)
class ExecutionFacts:
    """A summary of one :class:`QueryResult` (see :meth:`render`)."""

    ok: bool
    error: str | None
    columns: list[str]
    row_count: int
    truncated: bool
    first_rows: list[tuple]
    empty: bool
    all_null: bool
    single_repeated_value: bool

    @property
    def flags(self) -> list[str]:
        """Warning signs a wrong query often shows."""
        out = []
        if self.empty:
            out.append("EMPTY RESULT: no rows")
        if self.all_null:
            out.append("ALL VALUES ARE NULL")
        if self.single_repeated_value:
            out.append("every row holds the same value")
        return out

    def render(self) -> str:
        """A few lines for a prompt: the error, or the columns, the row count, the flags and the first rows."""
        if not self.ok:
            return f"ERROR: {self.error}"
        count = f"{self.row_count}{'+' if self.truncated else ''} row{'s' if self.row_count != 1 else ''}"
        lines = [f"columns: {', '.join(self.columns) or '(none)'}", count]
        lines += [f"warning: {flag}" for flag in self.flags]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in self.first_rows]
        if self.row_count > len(self.first_rows):
            lines.append(f"... {self.row_count - len(self.first_rows)} more rows")
        return "\n".join(lines)


def facts_of(result: QueryResult, *, max_rows: int = MAX_SHOWN_ROWS) -> ExecutionFacts:
    """Summarise ``result``; flags are computed over every returned row, not only the shown ones."""
    rows: Sequence[tuple] = result.rows if result.ok else []
    values = [v for row in rows for v in row]
    return ExecutionFacts(
        ok=result.ok,
        error=result.error,
        columns=list(result.columns),
        row_count=len(rows),
        truncated=result.truncated,
        first_rows=[tuple(r) for r in rows[:max_rows]],
        empty=result.ok and not rows,
        all_null=bool(values) and all(v is None for v in values),
        single_repeated_value=len(rows) > 1 and len(set(map(_hashable, rows))) == 1,
    )


def _hashable(row: Sequence[Any]) -> tuple:
    return tuple(v if isinstance(v, (int, float, str, bytes, type(None))) else repr(v) for v in row)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"
