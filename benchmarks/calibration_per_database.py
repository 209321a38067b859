#!/usr/bin/env python
"""Does a calibration fitted on one half of a database's questions hold on the other half?

    python benchmarks/calibration_per_database.py RUN [RUN ...] [--program v2] [--split 60]

Each RUN is a ``text2sql evaluate`` folder over one database (its ``records.jsonl``). Questions with index below
``--split`` form one half, the rest the other; :func:`~text2sql_dspy.programs.calibration.fit` (what
``text2sql calibrate`` saves) is fitted on each half and scored on the other: ECE (10 bins), the p-value of
"calibrated" (:func:`~text2sql_dspy.programs.calibration.consistency`: outcomes redrawn from the probabilities
themselves), ROC AUC, and the answers marked sure (how many, how many right). The program's reported
confidence on the same half is the row above. No model runs: the records hold the signals.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.report import roc_auc
from text2sql_dspy.programs.calibration import consistency, expected_calibration_error, fit


def calibrated_median(pairs: list[tuple[float, bool]], draws: int = 1000) -> float:
    """The median ECE that answers right with exactly these probabilities would show: the floor for this many."""
    import numpy as np

    rng = np.random.default_rng(0)
    p = np.array([x for x, _ in pairs])
    return float(np.median([expected_calibration_error(list(zip(p.tolist(), (rng.random(len(p)) < p).tolist())))
                            for _ in range(draws)]))


def row(name: str, pairs: list[tuple[float, bool]], sure: list[bool] | None = None) -> str:
    auc = roc_auc(pairs)
    cells = [f"{name:<34}", f"ECE {expected_calibration_error(pairs):.3f}", f"p(calibrated) {consistency(pairs):.2f}",
             f"(a calibrated map's median ECE here {calibrated_median(pairs):.3f})",
             f"AUC {'n/a' if auc is None else f'{auc:.2f}'}"]
    if sure is not None:
        kept = [right for (_, right), s in zip(pairs, sure, strict=True) if s]
        cells.append(f"sure {len(kept)} ({sum(kept)} right)")
    return "  ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--program", default="v2")
    parser.add_argument("--split", type=int, default=60, help="first index of the second half")
    args = parser.parse_args()
    for run in args.runs:
        records = [r for (p, _), r in sorted(load_records(Path(run) / "records.jsonl").items()) if p == args.program]
        halves = [r for r in records if r["index"] < args.split], [r for r in records if r["index"] >= args.split]
        for held, fitted in ((0, 1), (1, 0)):
            test = halves[held]
            calibration = fit([(r, bool(r.get("correct"))) for r in halves[fitted]])
            right = [bool(r.get("correct")) for r in test]
            print(f"{run}: fitted on half {fitted + 1} ({len(halves[fitted])}), scored on half {held + 1} "
                  f"({len(test)}, {sum(right)} right)")
            print("  " + row("reported confidence", [(float(r.get("raw_confidence", r.get("confidence")) or 0), c)
                                                       for r, c in zip(test, right, strict=True)]))
            if calibration is None:
                print("  no calibration: too few answers, or only one class")
                continue
            probabilities = [calibration.probability(r) for r in test]
            print("  " + row("fitted on the other half", list(zip(probabilities, right, strict=True)),
                             [calibration.sure_at is not None and p >= calibration.sure_at for p in probabilities])
                  + "  (sure from "
                  f"{calibration.sure_at if calibration.sure_at is None else round(calibration.sure_at, 2)})")


if __name__ == "__main__":
    main()
