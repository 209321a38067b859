"""What an optimizer's metric accepted, set against execution on the gold SQL.

A judge that serves as the optimizer's metric is only useful if it accepts the traces that are
right and rejects the ones that are wrong. :class:`TraceAudit` observes a :class:`Metric` while an
optimizer runs, and for every trace it scored records the metric's verdict (score >= threshold),
the judge's own verdict where the metric has a judge, and whether the query returns the gold
query's rows. :meth:`TraceAudit.summary` counts the disagreements both ways.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

from text2sql_dspy.optimize.metrics import Metric, Score, compare_execution, predicted_sql

__all__ = ["TraceAudit"]


@dataclass
class TraceAudit:
    """Records each scored trace's verdicts; attach with :meth:`watch`."""

    threshold: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def watch(self, metric: Metric) -> Metric:
        """``metric``, reporting every call it scores to this audit."""
        return replace(metric, observer=self.record)

    def record(self, example: Any, pred: Any, parts: dict[str, float], result: Score) -> None:
        gold = example.get("gold_sql") if hasattr(example, "get") else None
        if "execution" in parts:
            execution: bool | None = parts["execution"] >= 1.0
        elif gold and pred is not None:
            execution = compare_execution(predicted_sql(pred), gold, example.db_path).match
        else:
            execution = None
        row = {
            "question": str(example.get("question")),
            "scores": parts,
            "accepted": result.value >= self.threshold,
            "judge_accepted": parts["judge"] >= self.threshold if "judge" in parts else None,
            "execution_match": execution,
        }
        with self._lock:
            self.rows.append(row)

    def summary(self) -> dict[str, Any]:
        """Counts: traces scored, accepted by the metric, accepted by the judge alone, matching execution,
        and for the metric and the judge alone, accepted where execution rejects and the reverse."""
        graded = [r for r in self.rows if r["execution_match"] is not None]
        out: dict[str, Any] = {
            "traces": len(self.rows),
            "execution_matches": sum(r["execution_match"] for r in graded),
            "graded_by_execution": len(graded),
        }
        for verdict in ("accepted", "judge_accepted"):
            judged = [r for r in graded if r[verdict] is not None]
            if verdict == "judge_accepted" and not judged:
                continue
            prefix = "metric" if verdict == "accepted" else "judge_alone"
            out[f"{prefix}_accepted"] = sum(bool(r[verdict]) for r in self.rows)
            out[f"{prefix}_accepts_execution_rejects"] = sum(r[verdict] and not r["execution_match"] for r in judged)
            out[f"{prefix}_rejects_execution_accepts"] = sum(not r[verdict] and r["execution_match"] for r in judged)
        return out
