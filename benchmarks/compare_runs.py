#!/usr/bin/env python
"""Compare two ``text2sql evaluate`` runs on the questions they share, program by program.

    python benchmarks/compare_runs.py runs/served-sqlite runs/served-pg --program baseline --program v2

Questions are matched by their text, so a run over a whole split and a run over a filtered copy of
it (``benchmarks/load_postgres.py`` leaves out gold queries that do not transpile) compare like
with like. For each program: execution accuracy in each run on the shared questions, the questions
right in one run only, and the two-sided sign test on those.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.optimize.report import paired_comparison


def by_program(run: Path) -> dict[str, list[dict]]:
    programs: dict[str, list[dict]] = {}
    for (program, _), record in sorted(load_records(run / "records.jsonl").items()):
        programs.setdefault(program, []).append(record)
    return programs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="an evaluate --out folder")
    parser.add_argument("second", type=Path, help="another evaluate --out folder")
    parser.add_argument("--program", action="append", help="programs to compare (default: those in both runs)")
    args = parser.parse_args(argv)
    first, second = by_program(args.first), by_program(args.second)
    programs = args.program or [p for p in first if p in second]
    missing = [p for p in programs if p not in first or p not in second]
    if missing:
        print(f"not in both runs: {', '.join(missing)}", file=sys.stderr)
        return 2
    out = {}
    print(f"{'program':<12} {'shared':>6} {args.first.name:>16} {args.second.name:>16} {'only 1st':>8} {'only 2nd':>8} {'sign p':>7}")
    for program in programs:
        paired = paired_comparison(first[program], second[program], key="question")
        n = paired["questions"]
        print(f"{program:<12} {n:6d} {paired['reference_correct'] / n:16.1%} {paired['other_correct'] / n:16.1%} "
              f"{paired['lost']:8d} {paired['gained']:8d} {paired['sign_test_p']:7.3f}")
        out[program] = paired
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
