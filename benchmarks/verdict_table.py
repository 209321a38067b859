#!/usr/bin/env python
"""The figures of "knowing when an answer is wrong" for two ``text2sql evaluate`` runs of one program on the same
questions: accuracy with a sign test, the confidence's ROC AUC and ECE, how many answers read "likely right" and
how many of those are right, median latency, answers that are no query or do not run, and for conversations the
first-turn, later-turn and interaction figures, and the verdict's figures with other columns allowed; then each
signal's ROC AUC alone beside the verifier's, and the questions that changed.

    python benchmarks/verdict_table.py BEFORE_RUN AFTER_RUN [--program v2] [--after-program NAME] [--sure 0.945]
        [--verifier verifier.json] [--common]

``--common`` keeps only the questions both runs answered (runs stopped at different points).

Records of either record shape are read (``query`` or ``sql``; metrics at the top or under ``metrics``). "Likely
right" is the answer's verdict, worded by the one rule (``programs/verdict.py``) from what the record keeps it was
decided from (``verdict_inputs``); a record older than those: its own ``verdict`` words, and one older still, the
rule at ``--sure`` for every kind of answer. ``--verifier`` words the after run again by that verifier's cut-offs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.report import paired_comparison, roc_auc, total_of
from text2sql_dspy.programs.agents.verifier import KINDS, Verifier
from text2sql_dspy.programs.calibration import expected_calibration_error
from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.verdict import Verdict, VerdictInputs


def records(run: Path, program: str) -> list[dict]:
    """The run's records (``records.jsonl``, or ``records.jsonl.gz`` as committed under ``benchmarks/results``)."""
    found = list(load_records(run / "records.jsonl").values())
    rows = sorted((r for r in found if r["program"] == program), key=lambda r: r["index"])
    if not rows:
        programs = ", ".join(sorted({str(r["program"]) for r in found})) or "none"
        raise SystemExit(f"{run}: no records of program {program!r} (it holds: {programs}); pass --program "
                         "(and --after-program for the second run)")
    for r in rows:
        r["key"] = (r.get("interaction"), r.get("turn"), r["question"])
    return rows


def latency(r: dict) -> float:
    return float((r.get("metrics") or {}).get("latency_s") or r.get("latency_s") or 0.0)


def sql_of(r: dict) -> str:
    return r.get("sql") if "sql" in r else r.get("query") or ""


def was_early(r: dict) -> bool:
    """Whether the run answered with its first draft alone, by the verifier's early model."""
    return r.get("drafts") == 1 and any(s.get("kind") == "verify" for s in r.get("steps") or [])


OLDEST = "--sure"  # the cut-off a record older than any verdict is read at


def noted(chosen: dict) -> bool:
    """Whether a record's chosen reading carries a warning (a finding of a kind that does not invalidate it; a kind
    no longer known is left out)."""
    kinds = {str(f.get("kind")) for f in chosen.get("findings") or [] if isinstance(f, dict)}
    return any(not Kind(k).is_error for k in kinds if k in {kind.value for kind in Kind})


def inputs_of(r: dict, sure: float, verifier: Verifier | None = None) -> VerdictInputs | None:
    """What the record's verdict is decided from: its own ``verdict_inputs``; with ``verifier``, that verifier's
    cut-offs for the record's kind of answer (an answer of one draft the early model settled: the early model's; a
    calibrated one keeps its calibration's). A record older than the inputs: with ``verifier``, the kind read off its
    steps and turn; else None where it has its own ``verdict`` words, and for the oldest, ``sure`` for every kind (and
    no "likely wrong"); the warnings and validity read off its chosen reading."""
    if r.get("verdict_inputs"):
        stored = VerdictInputs.model_validate(r["verdict_inputs"])
        if verifier is None or stored.cut_off not in KINDS:
            return stored
        return verifier.inputs(early=stored.cut_off.endswith(" early"), follow_up=stored.cut_off.startswith("follow"),
                               noted=stored.noted, valid=stored.valid, submitted=stored.submitted)
    chosen = next((g for g in r.get("readings") or [] if g.get("chosen")), {})
    query = bool(sql_of(r))
    valid = query and bool(chosen.get("valid", True))
    if verifier is not None and "steps" in r:
        return verifier.inputs(early=was_early(r), follow_up=(r.get("turn") or 0) > 0, noted=noted(chosen),
                               valid=valid, submitted=query)
    if "verdict" in r:
        return None
    return VerdictInputs(cut_off=OLDEST, sure=sure, doubtful=0.0, noted=noted(chosen), valid=valid, submitted=query)


def verdict(r: dict, sure: float, verifier: Verifier | None = None) -> Verdict | None:
    """The record's verdict by the one rule, from :func:`inputs_of`; an older record's own words; None: unrated."""
    inputs = inputs_of(r, sure, verifier)
    if inputs is not None:
        return inputs.verdict(float(r.get("confidence") or 0.0))
    return Verdict(r["verdict"]) if r.get("verdict") in {v.value for v in Verdict} else None


def likely_right(r: dict, sure: float, verifier: Verifier | None = None) -> bool:
    """Whether the record's answer reads "likely right" (:func:`verdict`)."""
    return verdict(r, sure, verifier) is Verdict.LIKELY_RIGHT


def figures(rows: list[dict], sure: float, verifier: Verifier | None = None) -> dict:
    n = len(rows)
    pairs = [(float(r.get("confidence") or 0.0), bool(r["correct"])) for r in rows]
    marked = [r for r in rows if likely_right(r, sure, verifier)]
    out = {
        "questions": n, "right": sum(r["correct"] for r in rows),
        "accuracy": sum(r["correct"] for r in rows) / n,
        "confidence AUC": roc_auc(pairs), "confidence ECE": expected_calibration_error(pairs),
        "likely right": len(marked), "likely right, right": sum(r["correct"] for r in marked),
        "median latency s": statistics.median(latency(r) for r in rows),
        "no query or not running": sum(1 for r in rows if not sql_of(r) or not r.get("executes")),
        "replies cut at their cap or in a loop": total_of((r.get("metrics") or {}).get("cut_replies") for r in rows),
    }
    turns = [r for r in rows if r.get("turn") is not None]
    if turns:
        by_conversation: dict = {}
        for r in turns:
            by_conversation.setdefault(r["interaction"], []).append(bool(r["correct"]))
        first, later = [r for r in turns if r["turn"] == 0], [r for r in turns if r["turn"] > 0]
        out.update({
            "first turns": sum(r["correct"] for r in first) / len(first),
            "later turns": sum(r["correct"] for r in later) / len(later),
            "later turns, other columns allowed": sum(bool(r.get("correct_relaxed")) for r in later) / len(later),
            "confidence AUC, other columns allowed": roc_auc([(p, relaxed(r)) for (p, _), r in zip(pairs, rows)]),
            "likely right, right, other columns allowed": sum(relaxed(r) for r in marked),
            "every turn right": sum(all(c) for c in by_conversation.values()) / len(by_conversation),
            "follow-up latency / first": statistics.median(latency(r) for r in later)
            / statistics.median(latency(r) for r in first),
        })
    return out


def relaxed(r: dict) -> bool:
    """Right with other columns allowed (SParC's gold often returns every column, where a user would accept the
    columns asked for): the issue lets a conversation's verdict rows count right so, said as such."""
    return bool(r["correct"] or r.get("correct_relaxed"))


# A signal of the chosen reading or of the record, and whether a lower value means a righter answer.
SIGNALS = (("draft confidence", "confidence", False), ("weakest token", "weakest", False), ("tokens", "tokens", True),
           ("margin", "margin", False), ("doubts", "doubts", True), ("findings", "findings", True),
           ("agreement", "agreement", False), ("drafts", "drafts", True))


def signal_aucs(rows: list[dict]) -> dict[str, float]:
    """Each signal's ROC AUC alone (where most records carry it; one without ranks last), and the answer's
    confidence (the verifier's)."""
    out: dict[str, float] = {}
    for label, key, lower in SIGNALS:
        pairs, missing = [], 0
        for r in rows:
            chosen = next((g for g in r.get("readings") or [] if g.get("chosen")), None)
            value = r.get(key) if key in ("agreement", "drafts") else (chosen or {}).get(key)
            if isinstance(value, list):
                value = len(value)
            if value is None:
                missing += 1
            score = -1e9 if value is None else -float(value) if lower else float(value)
            pairs.append((score, bool(r["correct"])))
        if missing * 2 < len(rows) and len({p for p, _ in pairs}) > 1:
            out[label + (" (lower is righter)" if lower else "")] = roc_auc(pairs)
    out["the answer's confidence"] = roc_auc([(float(r.get("confidence") or 0.0), bool(r["correct"])) for r in rows])
    return out


def changed(before: list[dict], after: list[dict]) -> tuple[list[int], list[int]]:
    """The indexes of the questions the after run gained and lost."""
    was = {r["key"]: bool(r["correct"]) for r in before}
    gained = [r["index"] for r in after if r["key"] in was and r["correct"] and not was[r["key"]]]
    lost = [r["index"] for r in after if r["key"] in was and not r["correct"] and was[r["key"]]]
    return gained, lost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--program", default="v2")
    parser.add_argument("--after-program", help="the after run's program, where it differs (default: --program)")
    parser.add_argument("--sure", type=float, default=0.9, help="'likely right' for records without a verdict")
    parser.add_argument("--verifier", type=Path, help="a verifier.json whose thresholds read each verdict again")
    parser.add_argument("--common", action="store_true", help="only the questions both runs answered")
    args = parser.parse_args(argv)
    before, after = records(args.before, args.program), records(args.after, args.after_program or args.program)
    if args.common:
        both = {r["key"] for r in before} & {r["key"] for r in after}
        before, after = [r for r in before if r["key"] in both], [r for r in after if r["key"] in both]
    verifier = Verifier.from_json(json.loads(args.verifier.read_text())) if args.verifier else None
    a, b = figures(before, args.sure), figures(after, args.sure, verifier)
    print(f"{'figure':40s} {args.before.name:>14s} {args.after.name:>14s}")
    for key in a:
        x, y = a[key], b.get(key)
        shown = [f"{v:14.3f}" if isinstance(v, float) else f"{'n/a' if v is None else v:>14}" for v in (x, y)]
        print(f"{key:40s} {shown[0]} {shown[1]}")
    print(f"median latency ratio (after / before): {b['median latency s'] / a['median latency s']:.2f}")
    paired = paired_comparison(before, after, key="key")
    print(f"paired on {paired['questions']} questions: {paired['gained']} gained, {paired['lost']} lost, "
          f"sign test p = {paired['sign_test_p']:.3f}")
    if any(r.get("turn") is not None for r in before):
        for label, test in (("first turns", lambda r: r["turn"] == 0), ("later turns", lambda r: r["turn"] > 0)):
            part = paired_comparison([r for r in before if test(r)], [r for r in after if test(r)], key="key")
            print(f"  {label}: {part['gained']} gained, {part['lost']} lost, sign test p = {part['sign_test_p']:.3f}")
    gained, lost = changed(before, after)
    print(f"gained (after's index): {gained}\nlost: {lost}")
    for name, rows in ((args.before.name, before), (args.after.name, after)):
        print(f"ROC AUC of each signal alone, {name}: "
              + "; ".join(f"{k} {v:.3f}" for k, v in signal_aucs(rows).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
