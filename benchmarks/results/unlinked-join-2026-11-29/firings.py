"""How often the unlinked-join lint fires, on readings that are right and on readings that are wrong.

    python benchmarks/results/unlinked-join-2026-11-29/firings.py collected \
        benchmarks/results/verifier-data-2026-11-29/*.jsonl.gz --data-root ../shared/benchmarks/spider-train
    python benchmarks/results/unlinked-join-2026-11-29/firings.py records RECORDS.jsonl.gz --database DB.sqlite

``collected``: every reading of the verifier's training answers (``collect_candidates.py``), with whether it returns
the gold rows. ``records``: the chosen query of each answer of an ``evaluate`` run, with whether it was scored right.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from text2sql_dspy.programs.query.findings import Kind
from text2sql_dspy.programs.source import open_source


def fires(source, sql: str, question: str) -> bool:
    return any(f.kind is Kind.UNLINKED_JOIN for f in source.validator.validate(sql, question=question).findings)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("collected", "records"))
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", type=Path)
    parser.add_argument("--database", type=Path)
    args = parser.parse_args()
    tally = {True: [0, 0], False: [0, 0]}  # right / wrong: [readings, fired]
    for file in args.files:
        for line in gzip.open(file, "rt", encoding="utf-8"):
            record = json.loads(line)
            if args.what == "collected":
                db = args.data_root / "database" / record["db_id"] / f"{record['db_id']}.sqlite"
                source = open_source(db)
                pairs = [(r["sql"], ok) for r, ok in zip(record["answer"]["readings"], record["readings_correct"])]
                question = record["answer"]["question"]
            else:
                source = open_source(args.database)
                pairs = [(record["sql"], bool(record["correct"]))] if record.get("sql") else []
                question = record["question"]
            for sql, ok in pairs:
                hit = fires(source, sql, question)
                tally[ok][0] += 1
                tally[ok][1] += hit
                if hit:
                    print(f"  {'right' if ok else 'wrong'}: {sql[:150]}")
    for ok, label in ((True, "right"), (False, "wrong")):
        print(f"{label}: {tally[ok][1]} of {tally[ok][0]} fire")


if __name__ == "__main__":
    main()
