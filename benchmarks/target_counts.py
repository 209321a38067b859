#!/usr/bin/env python
"""Issue 54's counted targets ("Right on real databases"), read from runs' records: chosen answers with an empty (or
NULL-only) result that were never redrafted; chosen answers with a self-compared, cartesian or off-key join where a
clean valid reading existed; answers with no query. Asks nothing of the model.

    python benchmarks/target_counts.py RUN [RUN ...] [--program v2]

A run is a ``text2sql evaluate --out`` folder (``records.jsonl``, or ``records.jsonl.gz`` as committed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records

BAD_JOINS = {"always true join", "cartesian join", "off-key join"}


def kinds(reading: dict) -> set[str]:
    """The kinds of a recorded reading's findings."""
    return {f["kind"] if isinstance(f, dict) else str(f) for f in reading.get("findings", [])}


def counts(rows: list[dict]) -> dict[str, int]:
    """The targets' counts over one run's answers."""
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--program", default="v2")
    args = parser.parse_args(argv)
    for run in args.runs:
        rows = [r for (p, _), r in sorted(load_records(Path(run) / "records.jsonl").items()) if p == args.program]
        if not rows:
            raise SystemExit(f"{run}: no records of program {args.program!r}")
        print(run, counts(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
