#!/usr/bin/env python
"""Of the collected CoSQL follow-ups (sampling always), those whose rewrite points back and the others: how often the
stand-alone reading is right, how often another reading is, and how often the stand-alone one is the only right one.

    python benchmarks/results/pointing-back-2026-12-05/training_counts.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from text2sql_dspy.programs.conversation import points_back

COLLECTED = Path(__file__).resolve().parents[1] / "verifier-data-2026-12-05b" / "cosql-train.jsonl.gz"
OTHERS = ("draft", "sample", "redraft", "regroup")


def tally(label: str, records: list[dict]) -> None:
    alone = other = only = 0
    for r in records:
        steps = r["answer"]["steps"]
        rights = {x["sql"] for x, right in zip(r["answer"]["readings"], r["readings_correct"], strict=True) if right}
        standalone = next((s["sql"] for s in steps if s["kind"] == "standalone"), "")
        others = {s["sql"] for s in steps if s["kind"] in OTHERS and s["sql"]}
        alone += standalone in rights
        other += bool(others & rights)
        only += standalone in rights and not others & rights
    print(f"{label}: {len(records)} follow-ups; stand-alone reading right {alone}, another reading right {other}, "
          f"the stand-alone reading the only right one {only}")


def main() -> None:
    records = [json.loads(line) for line in gzip.open(COLLECTED, "rt") if line.strip()]
    follow_ups = [r for r in records if r.get("turn") and any(s["kind"] == "rewrite" for s in r["answer"]["steps"])]
    back = [r for r in follow_ups if any(points_back(s["note"]) for s in r["answer"]["steps"] if s["kind"] == "rewrite")]
    tally("rewrite points back", back)
    tally("the others", [r for r in follow_ups if r not in back])


if __name__ == "__main__":
    main()
