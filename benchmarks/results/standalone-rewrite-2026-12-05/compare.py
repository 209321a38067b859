#!/usr/bin/env python
"""The stand-alone readings of ``pointing_back.py``'s arm against the readings collected with today's instruction
(greedy decoding: today's arm rewrites and drafts the same bytes, checked on a sample), per kind of turn: how many
rewrites point back, how many readings are right, and a sign test.

    python benchmarks/results/standalone-rewrite-2026-12-05/compare.py ALONE.jsonl
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from text2sql_dspy.optimize.report import paired_comparison

COLLECTED = Path(__file__).resolve().parents[1] / "verifier-data-2026-12-05" / "cosql-train.jsonl.gz"


def main() -> int:
    records = {r["index"]: r for r in (json.loads(line) for line in gzip.open(COLLECTED, "rt") if line.strip())}
    arm = [json.loads(line) for line in Path(sys.argv[1]).open()]
    for kind, back in (("rewrites pointing back", True), ("other rewrites", False)):
        mine = [a for a in arm if a["points_back"] is back]
        before, after = [], []
        for i, a in enumerate(mine):
            record = records[a["index"]]
            sql = next(s["sql"] for s in record["answer"]["steps"] if s["kind"] == "standalone")
            right = dict(zip([r["sql"] for r in record["answer"]["readings"]], record["readings_correct"], strict=True))
            before.append({"index": i, "correct": bool(right.get(sql, False))})
            after.append({"index": i, "correct": bool(a["right"])})
        test = paired_comparison(before, after)
        print(f"{kind}: {len(mine)} turns; pointing back after the change {sum(a['points_back_now'] for a in mine)}; "
              f"rewrite unchanged {sum(a['rewrite'] == a['recorded'] for a in mine)}; stand-alone reading right "
              f"{sum(b['correct'] for b in before)} -> {sum(a['correct'] for a in after)} ({test['gained']} gained, "
              f"{test['lost']} lost, sign test p = {test['sign_test_p']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
