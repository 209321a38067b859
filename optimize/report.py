"""Summaries, reliability statistics and plots for ``text2sql evaluate`` (:mod:`text2sql_dspy.optimize.evaluation`).

A record is one answered question (see ``evaluation.answer_one``); a summary is one program's
figures. Judge reliability compares ``judge_score`` with execution correctness; calibration
compares ``confidence`` with it (expected calibration error, 10 equal-width bins, and a reliability
diagram); risk-coverage says how many questions are answered at each confidence, and how many of
those are right.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from text2sql_dspy.optimize.provenance import described
from text2sql_dspy.programs.agents.judge import ACCEPT_SCORE
from text2sql_dspy.programs.calibration import expected_calibration_error

COVERAGE_CUTS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.0)  # the report's risk-coverage rows: confidence at least this
# the agent's work, from each answer's metrics
SEED_METRICS = ("validations", "judge_calls", "redrafts", "repair_steps")


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One program's figures over its records."""
    n = len(records)
    correct = [bool(r.get("correct")) for r in records]
    latencies = [float(m["latency_s"]) for r in records if (m := r.get("metrics")) and m.get("latency_s") is not None]
    judged = [(float(r["judge_score"]), c) for r, c in zip(records, correct) if r.get("judge_score") is not None]
    confident = [(float(r["confidence"]), c) for r, c in zip(records, correct) if r.get("confidence") is not None]
    summary: dict[str, Any] = {
        "questions": n,
        "correct": sum(correct),
        "execution_accuracy": sum(correct) / n if n else 0.0,
        "relaxed_accuracy": _share(r.get("correct_relaxed") for r in records),
        "valid_sql_rate": sum(bool(r.get("executes")) for r in records) / n if n else 0.0,
        "errors": sum(1 for r in records if r.get("error")),
        "fallbacks": sum(1 for r in records if r.get("status") in ("failed", "refused")),
        "latency_p50": percentile(latencies, 50),
        "latency_p90": percentile(latencies, 90),
        "latency_p95": percentile(latencies, 95),
        "lm_calls_mean": _mean(_metric(r, "lm_calls") for r in records),
        "lm_calls_median": _median(_metric(r, "lm_calls") for r in records),
        "prompt_tokens_mean": _mean(_metric(r, "prompt_tokens") for r in records),
        "completion_tokens_mean": _mean(_metric(r, "completion_tokens") for r in records),
        "cut_replies": total_of(_metric(r, "cut_replies") for r in records),
        "cost_per_question": _mean(_metric(r, "cost_usd") for r in records),
        "total_cost": sum(float(_metric(r, "cost_usd") or 0.0) for r in records),
        "mean_judge_score": _mean(s for s, _ in judged),
        "confidence_ece": expected_calibration_error(confident),
        "confidence_auc": roc_auc(confident),
        "judge_ece": expected_calibration_error(judged),
        "risk_coverage": [[cut, *answered_at(confident, cut)] for cut in COVERAGE_CUTS],
    }
    summary.update(judge_reliability(judged))
    turns = [r for r in records if r.get("turn") is not None]
    if turns:
        conversations: dict[Any, list[bool]] = {}
        for r in turns:
            conversations.setdefault(r["interaction"], []).append(bool(r.get("correct")))
        summary["first_turn_accuracy"] = _share(r.get("correct") for r in turns if r["turn"] == 0)
        summary["later_turn_accuracy"] = _share(r.get("correct") for r in turns if r["turn"] > 0)
        summary["interaction_accuracy"] = _share(all(c) for c in conversations.values())
        # as users read it: the rows asked for, other columns beside them allowed (SParC's gold often selects *)
        summary["first_turn_relaxed"] = _share(r.get("correct_relaxed") for r in turns if r["turn"] == 0)
        summary["later_turn_relaxed"] = _share(r.get("correct_relaxed") for r in turns if r["turn"] > 0)
        summary["interactions"] = len(conversations)
    unsure = [r for r in records if r.get("alternatives_correct")]
    summary["unsure"] = len(unsure)
    summary["unsure_first_right"] = sum(bool(r.get("correct")) for r in unsure)
    summary["unsure_either_right"] = sum(any(r["alternatives_correct"]) for r in unsure)
    for key in SEED_METRICS:
        summary[f"{key}_mean"] = _mean(_metric(r, key) for r in records)
    return summary


def total_of(values: Iterable[Any]) -> int | None:
    """The sum of the values recorded; None where no record has one (records written before the metric was)."""
    present = [int(v) for v in values if v is not None]
    return sum(present) if present else None


def _metric(record: dict[str, Any], key: str) -> Any:
    """One of an answer's metrics (:class:`~..programs.answer.Metrics`) as its record holds it."""
    return (record.get("metrics") or {}).get(key)


def paired_comparison(reference: list[dict[str, Any]], other: list[dict[str, Any]],
                      key: str = "index") -> dict[str, Any]:
    """``other`` against ``reference`` on the questions both answered (matched by ``key``).

    ``gained``: right in ``other`` where ``reference`` was wrong; ``lost``: the reverse. ``sign_test_p``
    is the two-sided exact binomial (sign) test on the questions that differ.
    """
    from scipy.stats import binomtest

    mine = {r[key]: bool(r.get("correct")) for r in reference}
    pairs = [(mine[r[key]], bool(r.get("correct"))) for r in other if r[key] in mine]
    gained = sum(1 for a, b in pairs if b and not a)
    lost = sum(1 for a, b in pairs if a and not b)
    return {
        "questions": len(pairs),
        "reference_correct": sum(a for a, _ in pairs),
        "other_correct": sum(b for _, b in pairs),
        "gained": gained,
        "lost": lost,
        "sign_test_p": float(binomtest(gained, gained + lost).pvalue) if gained + lost else 1.0,
    }


def answered_at(pairs: list[tuple[float, bool]], cut: float) -> tuple[int, int]:
    """(answers with confidence at least ``cut``, how many of them are right): one point of a risk-coverage curve."""
    kept = [right for confidence, right in pairs if confidence >= cut]
    return len(kept), sum(kept)


def risk_coverage(pairs: list[tuple[float, bool]]) -> tuple[list[float], list[float]]:
    """Coverage (share of answers kept) and accuracy of the kept ones, keeping answers from the most confident down;
    ties in confidence are kept together, as one cut-off would keep them."""
    xs, ys = [], []
    for cut in sorted({confidence for confidence, _ in pairs}, reverse=True):
        answered, right = answered_at(pairs, cut)
        xs.append(answered / len(pairs))
        ys.append(right / answered)
    return xs, ys


def judge_reliability(pairs: list[tuple[float, bool]]) -> dict[str, float | None]:
    """Agreement and Cohen's kappa of ``score >= 0.7`` with execution correctness, and ROC AUC of the score."""
    if not pairs:
        return {"judge_agreement": None, "judge_kappa": None, "judge_auc": None}
    from sklearn.metrics import cohen_kappa_score

    scores = [s for s, _ in pairs]
    truth = [int(c) for _, c in pairs]
    accepted = [int(s >= ACCEPT_SCORE) for s in scores]  # the judge's judgments, as the agents' bar reads them
    agreement = sum(a == t for a, t in zip(accepted, truth)) / len(pairs)
    kappa = cohen_kappa_score(truth, accepted) if len(set(truth) | set(accepted)) > 1 else None
    return {
        "judge_agreement": agreement,
        "judge_kappa": None if kappa is None or math.isnan(kappa) else float(kappa),
        "judge_auc": roc_auc(pairs),
    }


def roc_auc(pairs: list[tuple[float, bool]]) -> float | None:
    """ROC AUC of the scores against correctness; None unless both right and wrong answers are present."""
    truth = [int(c) for _, c in pairs]
    if len(set(truth)) < 2:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(truth, [s for s, _ in pairs]))


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (linear interpolation); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def write_report(out: Path, summaries: dict[str, dict], records: dict[str, list[dict]], meta: dict[str, Any]) -> None:
    """Write ``results.json``, ``report.md`` and the PNG plots into ``out``."""
    names = list(records)
    paired = {name: paired_comparison(records[names[0]], records[name]) for name in names[1:]}
    meta = {**meta, "paired": paired, "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    codes = sorted({described(r["code"]) for rows in records.values() for r in rows if r.get("code")})
    if codes:  # which code answered (more than one where a run was resumed after the code changed)
        meta["code"] = codes
    results = {"meta": meta, "programs": summaries, "records": records}
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    plots = write_plots(out, summaries, records)
    (out / "report.md").write_text(markdown_report(summaries, meta, plots), encoding="utf-8")


def markdown_report(summaries: dict[str, dict], meta: dict[str, Any], plots: list[str]) -> str:
    rows = [
        ("Execution accuracy", "execution_accuracy", "{:.1%}"),
        ("Relaxed accuracy (same rows, other columns allowed)", "relaxed_accuracy", "{:.1%}"),
        ("Valid SQL rate", "valid_sql_rate", "{:.1%}"),
        ("Mean judge score", "mean_judge_score", "{:.2f}"),
        ("Judge agreement with execution", "judge_agreement", "{:.1%}"),
        ("Judge Cohen's kappa", "judge_kappa", "{:.2f}"),
        ("Judge ROC AUC", "judge_auc", "{:.2f}"),
        ("Judge score ECE (calibration against execution)", "judge_ece", "{:.3f}"),
        ("Confidence ECE", "confidence_ece", "{:.3f}"),
        ("Confidence ROC AUC (the answer's confidence against execution)", "confidence_auc", "{:.2f}"),
        ("Latency p50 (s)", "latency_p50", "{:.1f}"),
        ("Latency p95 (s)", "latency_p95", "{:.1f}"),
        ("LM calls / question (median)", "lm_calls_median", "{:.1f}"),
        ("Prompt tokens / question", "prompt_tokens_mean", "{:.0f}"),
        ("Completion tokens / question", "completion_tokens_mean", "{:.0f}"),
        ("LM replies cut at their cap or in a loop", "cut_replies", "{}"),
        ("Cost / question (USD)", "cost_per_question", "{:.5f}"),
        ("Validations", "validations_mean", "{:.2f}"),
        ("Judge calls", "judge_calls_mean", "{:.2f}"),
        ("Mean judge score", "mean_judge_score", "{:.2f}"),
        ("Redrafts", "redrafts_mean", "{:.2f}"),
        ("Repair steps", "repair_steps_mean", "{:.2f}"),
        ("Conversations: first turns right", "first_turn_accuracy", "{:.1%}"),
        ("Conversations: later turns right", "later_turn_accuracy", "{:.1%}"),
        ("Conversations: first turns right, other columns allowed", "first_turn_relaxed", "{:.1%}"),
        ("Conversations: later turns right, other columns allowed", "later_turn_relaxed", "{:.1%}"),
        ("Conversations: every turn right (interaction accuracy)", "interaction_accuracy", "{:.1%}"),
        ("Unsure answers (two readings shown)", "unsure", "{}"),
        ("... of which the first reading is right", "unsure_first_right", "{}"),
        ("... of which either reading is right", "unsure_either_right", "{}"),
        ("Fallback answers", "fallbacks", "{}"),
        ("Failed questions", "errors", "{}"),
    ]
    names = list(summaries)
    lines = [
        f"# Evaluation: {meta.get('data')} / {meta.get('split')} ({meta.get('questions')} questions)",
        "",
        *([f"Scored as {meta['scored as']}.", ""] if meta.get("scored as") else []),
        *([f"Answered by the code {', '.join(meta['code'])} "
           "(a digest of the programs and signatures, at their git commit).", ""] if meta.get("code") else []),
        *([f"Evidence (the data's per-question hints): {meta['evidence']}; value lookup: "
           f"{meta.get('value lookup', 'on')}.",
           ""] if "evidence" in meta else []),
        *([f"Conversations (SParC): each turn shown the program's own earlier turns: {meta['history']}.", ""]
          if "history" in meta else []),
        "| Metric | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, key, fmt in rows:
        per_turn = key.endswith(("turn_accuracy", "turn_relaxed", "interaction_accuracy"))
        if per_turn and all(summaries[n].get(key) is None for n in names):
            continue  # not a conversation set
        cells = [_fmt(summaries[n].get(key), fmt) for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if len(names) > 1:
        lines += ["", f"Against {names[0]}, question by question (two-sided sign test on the questions that differ):",
                  "",
                  "| program | right where it was wrong | wrong where it was right | sign test p |",
                  "|---|---|---|---|"]
        for name in names[1:]:
            paired = meta.get("paired", {}).get(name)
            if paired:
                p = paired["sign_test_p"]
                lines.append(f"| {name} | {paired['gained']} | {paired['lost']} | "
                             f"{'< 0.001' if p < 0.001 else f'{p:.3f}'} |")
    if any(summaries[n].get("risk_coverage") and summaries[n].get("questions") for n in names):
        lines += ["", "Answered at each confidence (risk-coverage): answers whose confidence is at least the cut-off, "
                  "and how many of them are right:", "", "| confidence at least | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        for i, cut in enumerate(COVERAGE_CUTS):
            lines.append(f"| {cut:.1f} | " + " | ".join(_coverage_cell(summaries[n], i) for n in names) + " |")
    lines += ["", f"Written {meta['written_at']}.", ""]
    lines += [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def write_plots(out: Path, summaries: dict[str, dict], records: dict[str, list[dict]]) -> list[str]:
    """Accuracy/latency/cost bars per program, reliability diagrams of the judge's score and of the confidence, and
    the confidence's risk-coverage curve; the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summaries)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    panels = [
        ("Execution accuracy", [summaries[n]["execution_accuracy"] * 100 for n in names], "%"),
        ("Latency p50 (s)", [summaries[n]["latency_p50"] for n in names], "s"),
        ("LM calls / question", [summaries[n]["lm_calls_mean"] or 0 for n in names], ""),
    ]
    for ax, (title, values, unit) in zip(axes, panels):
        bars = ax.bar(names, values, color="#4C72B0")
        ax.set_title(title)
        ax.bar_label(bars, labels=[f"{v:.1f}{unit}" for v in values])
        ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(out / "comparison.png", dpi=110)
    plt.close(fig)
    written = ["comparison.png"]

    for key, label in (("judge_score", "judge correctness_score"), ("confidence", "confidence")):
        scored = _scored(records, key)
        if scored:
            fig, ax = plt.subplots(figsize=(5, 4.5))
            ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
            for name, pairs in scored.items():
                ax.plot(*_reliability_curve(pairs), "o-", label=name)
            ax.set_xlabel(f"{label} (bin mean)")
            ax.set_ylabel("fraction correct by execution")
            ax.set_title("Judge reliability" if key == "judge_score" else "Confidence reliability")
            ax.legend()
            fig.tight_layout()
            file = "judge_reliability.png" if key == "judge_score" else "confidence_reliability.png"
            fig.savefig(out / file, dpi=110)
            plt.close(fig)
            written.append(file)
    confident = _scored(records, "confidence")
    if confident:
        fig, ax = plt.subplots(figsize=(5, 4.5))
        for name, pairs in confident.items():
            ax.plot(*risk_coverage(pairs), ".-", label=name)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("share of questions answered (most confident first)")
        ax.set_ylabel("fraction of those right")
        ax.set_title("Risk-coverage")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "risk_coverage.png", dpi=110)
        plt.close(fig)
        written.append("risk_coverage.png")
    return written


def _coverage_cell(summary: dict[str, Any], row: int) -> str:
    rows, n = summary.get("risk_coverage") or [], summary.get("questions") or 0
    if row >= len(rows) or not n:
        return "–"
    _, answered, right = rows[row]
    return f"{answered} ({answered / n:.0%}), {right} right" + (f" ({right / answered:.0%})" if answered else "")


def _reliability_curve(pairs: list[tuple[float, bool]], bins: int = 5) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(s, c) for s, c in pairs if lo <= s < hi or (b == bins - 1 and s == 1.0)]
        if members:
            xs.append(sum(s for s, _ in members) / len(members))
            ys.append(sum(c for _, c in members) / len(members))
    return xs, ys


def _scored(records: dict[str, list[dict]], key: str) -> dict[str, list[tuple[float, bool]]]:
    """Per program, (``key``'s value, right) for the records that have the value; programs without any left out."""
    scored = {n: [(float(r[key]), bool(r.get("correct"))) for r in rs if r.get(key) is not None]
              for n, rs in records.items()}
    return {n: pairs for n, pairs in scored.items() if pairs}


def _fmt(value: Any, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def _numbers(values: Any) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _mean(values: Any) -> float | None:
    numbers = _numbers(values)
    return statistics.fmean(numbers) if numbers else None


def _share(flags: Any) -> float | None:
    """Fraction of true flags; None when any record lacks the flag."""
    values = list(flags)
    return sum(map(bool, values)) / len(values) if values and None not in values else None


def _median(values: Any) -> float | None:
    numbers = _numbers(values)
    return statistics.median(numbers) if numbers else None
