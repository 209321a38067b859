#!/usr/bin/env python
"""Where a judge's separation comes from: answers whose result shows a symptom, and answers whose result looks fine.

    python benchmarks/judge_symptoms.py benchmarks/results/spider-dev-four-programs-2026-11-24/records.jsonl.gz \\
        --program v2 --data ../shared/benchmarks/spider-public
    python benchmarks/judge_symptoms.py benchmarks/results/bundled-test-four-programs-2026-11-24/records.jsonl.gz \\
        --program v2

Each judged answer of ``--program`` in an evaluate run's records is run again read-only on its
database (``--data``: a Spider-format folder; default the bundled data) and put in one of two
groups: a *symptom* (the query errs, returns nothing, only NULLs or one repeated row: the flags the
judge is shown) or a *plausible* result. Printed: the judge's ROC AUC against execution overall and
within the plausible group, the symptom group's size and mean score, and the ROC AUC of the
symptom flag alone, as if it were the score.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path

from text2sql_dspy.optimize.report import roc_auc
from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.dataset import database_path
from text2sql_dspy.programs.query.results import facts_of
from text2sql_dspy.programs.source import open_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, help="an evaluate run's records.jsonl (or .jsonl.gz)")
    parser.add_argument("--program", required=True, help="the program's name as the records give it")
    parser.add_argument("--data", type=Path, default=BUNDLED_DATA, help="the data folder the run answered")
    args = parser.parse_args()

    rows = []  # (correct, judge score, plausible result)
    packed = args.records.suffix == ".gz"
    text = gzip.decompress(args.records.read_bytes()).decode() if packed else args.records.read_text()
    for line in text.splitlines():
        record = json.loads(line)
        if record["program"] != args.program or record.get("judge_score") is None:
            continue
        source = open_source(database_path(args.data, record["db_id"]))
        facts = facts_of(source.database.execute(record["query"]))
        rows.append((bool(record["correct"]), record["judge_score"], facts.ok and not facts.empty and not facts.flags))
    if not rows:
        parser.error(f"no judged answer of {args.program!r} in {args.records}")

    plausible = [r for r in rows if r[2]]
    symptom = [r for r in rows if not r[2]]
    auc = lambda group: roc_auc([(score, correct) for correct, score, _ in group])  # noqa: E731
    fmt = lambda value: "n/a" if value is None else f"{value:.2f}"  # noqa: E731
    print(f"{args.program}: {len(rows)} judged answers, {sum(r[0] for r in rows)} right; "
          f"judge ROC AUC {fmt(auc(rows))}")
    print(f"  plausible result: {len(plausible)} ({sum(r[0] for r in plausible)} right, "
          f"{sum(not r[0] for r in plausible)} wrong), judge ROC AUC within them {fmt(auc(plausible))}")
    if symptom:
        print("  a symptom (error, empty, all NULL, one repeated row): "
              f"{len(symptom)} ({sum(r[0] for r in symptom)} right), "
              f"mean judge score {statistics.mean(r[1] for r in symptom):.2f}")
    print(f"  ROC AUC of 'the result looks plausible' alone: {fmt(roc_auc([(float(r[2]), r[0]) for r in rows]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
