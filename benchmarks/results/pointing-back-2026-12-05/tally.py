#!/usr/bin/env python
"""Per arm of run.sh: turns, right, turns whose live rewrite points back, model calls and replies cut at the cap,
over all turns and over those pointing back in the before arm.

    python benchmarks/results/pointing-back-2026-12-05/tally.py /tmp/pb/out SET
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from text2sql_dspy.optimize.evaluation import load_records  # noqa: E402
from text2sql_dspy.programs.conversation import points_back  # noqa: E402


def pointing(record: dict) -> bool:
    return any(points_back(s["note"]) for s in record["steps"] if s["kind"] == "rewrite")


def main(out: Path, name: str) -> None:
    arms = {arm: list(load_records(out / arm / name / "records.jsonl").values()) for arm in ("before", "after")}
    touched = {r["index"] for r in arms["before"] if pointing(r)}
    for arm, records in arms.items():
        for label, rows in (("all", records), ("pointing back before", [r for r in records if r["index"] in touched])):
            print(f"{name} {arm:6s} {label:21s} turns {len(rows):3d}  right {sum(bool(r['correct']) for r in rows):3d}"
                  f"  rewrite points back {sum(pointing(r) for r in rows):2d}"
                  f"  model calls {sum(r['metrics']['lm_calls'] for r in rows):4d}"
                  f"  cut replies {sum(r['metrics'].get('cut_replies', 0) for r in rows)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
