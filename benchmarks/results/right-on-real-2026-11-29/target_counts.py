#!/usr/bin/env python
"""The issue's counted targets, read from runs' records: chosen answers with an empty (or NULL-only) result that
were never redrafted; chosen answers with a self-compared, cartesian or off-key join where a clean valid reading
existed; answers with no query.

    python benchmarks/results/right-on-real-2026-11-29/target_counts.py RUN...   (a run: records.jsonl[.gz] folder)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from verdict_table import records  # noqa: E402

BAD_JOINS = {"always true join", "cartesian join", "off-key join"}


def kinds(reading: dict) -> set[str]:
    return {f["kind"] if isinstance(f, dict) else str(f) for f in reading.get("findings", [])}


def counts(rows: list[dict]) -> dict[str, int]:
    empty_kept = bad_join_over_clean = no_query = 0
    for r in rows:
        chosen = next((x for x in r["readings"] if x.get("chosen")), None)
        if not r.get("sql") or chosen is None:
            no_query += 1
            continue
        redrafted = any(s["kind"] == "redraft" for s in r["steps"])
        empty_kept += "empty result" in kinds(chosen) and not redrafted
        clean = [x for x in r["readings"] if x is not chosen and x.get("valid") and not kinds(x) & BAD_JOINS]
        bad_join_over_clean += bool(kinds(chosen) & BAD_JOINS) and bool(clean)
    return {"answers": len(rows), "empty result, never redrafted": empty_kept,
            "bad join chosen over a clean reading": bad_join_over_clean, "no query": no_query}


def main() -> int:
    for run in sys.argv[1:]:
        print(run, counts(records(Path(run), "v2")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
