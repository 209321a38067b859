#!/usr/bin/env python
"""How verifier files rank the answers of ``text2sql evaluate`` runs, asking nothing of the model: each answer's
chosen reading is checked again by today's validator and scored by each verifier (its early model where the answer
was the first draft alone, sure by the early model, else its full model), beside the confidence the run recorded.

    python benchmarks/rescore_verifier.py RUN_DIR [RUN_DIR ...] --verifier A.json [--verifier B.json ...] \
        --data-root DIR [--data-root DIR ...] [--program v2]

A run's choices are the verifier's it ran with; only the scoring of the chosen answer changes here. Prints, per run
and verifier: ROC AUC, ECE, and how many answers read "likely right" and how many of them are right, for all
answers and, in conversations, for first and later turns. An answer with no query scores 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/
from verdict_table import records, was_early  # noqa: E402

from text2sql_dspy.optimize.fit_verifier import database_of, rechecked  # noqa: E402
from text2sql_dspy.optimize.report import roc_auc  # noqa: E402
from text2sql_dspy.programs.agents.verifier import Verifier  # noqa: E402
from text2sql_dspy.programs.answer import Reading  # noqa: E402
from text2sql_dspy.programs.calibration import expected_calibration_error  # noqa: E402
from text2sql_dspy.programs.verdict import Verdict, verdict_of  # noqa: E402


def scored(record: dict, verifier: Verifier, previous: str, db: Path) -> tuple[float, bool]:
    """``verifier``'s probability for the record's answer, and whether it reads "likely right"."""
    chosen = next((r for r in record.get("readings") or [] if r.get("chosen")), None)
    if not record.get("sql") or chosen is None:
        return 0.0, False
    reading = rechecked(Reading.model_validate(chosen), record["question"], db, previous)
    early = was_early(record)
    groups = max(1, sum(1 for r in record["readings"] if r.get("valid") and r.get("preview") is not None))
    p = verifier.probability(reading, record["question"], drafts=int(record.get("drafts") or 1), groups=groups,
                             early=early, previous=previous)
    noted = bool(reading.warnings)
    words = verdict_of(p, sure=verifier.sure_at(early=early, follow_up=bool(previous)), doubtful=verifier.doubtful,
                       noted=noted, valid=reading.valid)
    return p, words is Verdict.LIKELY_RIGHT


def line(label: str, rows: list[tuple[float, bool, bool]]) -> str:
    pairs = [(p, y) for p, y, _ in rows]
    marked = [y for _, y, sure in rows if sure]
    auc = roc_auc(pairs)
    share = f"{sum(marked) / len(marked):.1%}" if marked else "n/a"
    return (f"  {label:14s} {len(rows):4d} answers, {sum(y for _, y in pairs):4d} right; AUC "
            f"{'n/a' if auc is None else f'{auc:.3f}'}, ECE {expected_calibration_error(pairs):.3f}; likely right "
            f"{len(marked)} ({share} right)")


def arguments(description: str) -> argparse.ArgumentParser:
    """The options of this script and of ``replay_choice.py``: runs, verifier files, where the databases are, which
    answers."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--verifier", action="append", type=Path, required=True)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--program", default="v2")
    parser.add_argument("--databases", help="only the answers over these databases (comma-separated)")
    parser.add_argument("--relaxed", action="store_true",
                        help="count an answer right that returns the gold rows with other columns (SParC's SELECT *)")
    return parser


def verifiers_of(args: argparse.Namespace) -> dict[str, Verifier]:
    return {str(path): Verifier.from_json(json.loads(path.read_text())) for path in args.verifier}


def answers_of(run: Path, args: argparse.Namespace) -> list[tuple[dict, str, Path]]:
    """The run's records of ``--program`` over ``--databases``, each with the query of the turn before it and its
    database; ``correct`` counts other columns as right with ``--relaxed``."""
    only = set(args.databases.split(",")) if args.databases else None
    rows = [r for r in records(run, args.program) if only is None or r["db_id"] in only]
    answered = {(r["db_id"], r.get("interaction"), r.get("turn")): r.get("sql") or "" for r in rows}
    out = []
    for r in rows:
        r["correct"] = bool(r["correct"] or (args.relaxed and r.get("correct_relaxed")))
        turn = r.get("turn")
        previous = answered.get((r["db_id"], r.get("interaction"), turn - 1), "") if turn else ""
        out.append((r, previous, database_of(r["db_id"], args.data_root)))
    return out


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__.split("\n\n")[0]).parse_args(argv)
    verifiers = verifiers_of(args)
    for run in args.runs:
        answers = answers_of(run, args)
        rows = [r for r, _, _ in answers]
        print(f"{run}: {len(rows)} answers of {args.program}")
        recorded = [(float(r.get("confidence") or 0), bool(r["correct"]), r.get("verdict") == "likely right")
                    for r in rows]
        parts = {"all": lambda r: True, "first turns": lambda r: r.get("turn") == 0,
                 "later turns": lambda r: (r.get("turn") or 0) > 0}
        print(" as recorded")
        for label, keep in parts.items():
            chosen = [x for x, r in zip(recorded, rows, strict=True) if keep(r)]
            if chosen and (label == "all" or rows[0].get("turn") is not None):
                print(line(label, chosen))
        for name, verifier in verifiers.items():
            out = []
            for r, previous, db in answers:
                p, sure = scored(r, verifier, previous, db)
                out.append((p, bool(r["correct"]), sure))
            print(f" {name}")
            for label, keep in parts.items():
                chosen = [x for x, r in zip(out, rows, strict=True) if keep(r)]
                if chosen and (label == "all" or rows[0].get("turn") is not None):
                    print(line(label, chosen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
