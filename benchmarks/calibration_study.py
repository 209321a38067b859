#!/usr/bin/env python
"""Can one map from V2's signals to a probability be calibrated on data it was not fitted on?

    python benchmarks/calibration_study.py spider=RUN_A bundled=RUN_B bird=RUN_C [--program v2]

Each RUN is a ``text2sql evaluate`` output folder (its ``records.jsonl``). For every set in turn, a
logistic map (scikit-learn) and an isotonic map of the confidence are fitted on the other sets' records
and scored on this one: ECE (10 bins) and ROC AUC, against the confidence the program reports. Then, per
threshold, how many answers the reported confidence covers and how many of those are right. The
signals are the ones every record carries: the judge's probability, the reported confidence, the share
of drafts that agree, the number of drafts, whether the query validated, whether the answer is a
fallback, and the LM calls spent.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.report import roc_auc
from text2sql_dspy.programs.calibration import expected_calibration_error, signals


def scored(probabilities: np.ndarray, right: np.ndarray) -> str:
    pairs = list(zip(probabilities.tolist(), right.tolist(), strict=True))
    return f"ECE {expected_calibration_error(pairs):.3f}  AUC {roc_auc(pairs):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="NAME=RUN_FOLDER")
    parser.add_argument("--program", default="v2")
    args = parser.parse_args()
    sets = {}
    for item in args.sets:
        name, folder = item.split("=", 1)
        sets[name] = [r for (p, _), r in sorted(load_records(Path(folder) / "records.jsonl").items())
                      if p == args.program]
    print(f"{'held-out set':<14}{'n':>5}{'right':>8}  {'reported confidence':<24}{'logistic, fitted on the others':<34}"
          "isotonic on confidence, fitted on the others")
    for held, records in sets.items():
        others = [r for name, rs in sets.items() if name != held for r in rs]
        x, y = np.array([signals(r) for r in others]), np.array([bool(r.get("correct")) for r in others])
        xt, yt = np.array([signals(r) for r in records]), np.array([bool(r.get("correct")) for r in records])
        logistic = LogisticRegression().fit(x, y).predict_proba(xt)[:, 1]
        isotonic = IsotonicRegression(out_of_bounds="clip").fit(x[:, 1], y).predict(xt[:, 1])
        print(f"{held:<14}{len(records):>5}{yt.mean():>8.1%}  {scored(xt[:, 1], yt):<24}{scored(logistic, yt):<34}"
              f"{scored(isotonic, yt)}")
    print("\nanswers with reported confidence >= t: the share of the set covered, and the share of those right")
    for t in (0.5, 0.6, 0.7, 0.75):
        cells = []
        for name, records in sets.items():
            kept = [r for r in records if float(r.get("confidence") or 0.0) >= t]
            right = sum(bool(r.get("correct")) for r in kept) / len(kept) if kept else float("nan")
            cells.append(f"{name}: {len(kept) / len(records):4.0%} covered, {right:4.0%} right")
        print(f"t={t:.2f}  " + " | ".join(cells))


if __name__ == "__main__":
    main()
