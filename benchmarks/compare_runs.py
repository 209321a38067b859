#!/usr/bin/env python
"""Compare two ``text2sql evaluate`` runs on the questions they share, program by program.

    python benchmarks/compare_runs.py runs/served-sqlite runs/served-pg --program baseline --program v2
    python benchmarks/compare_runs.py runs/v2 runs/compiled --pair v2=runs/compiled/v2-bundled.json

Questions are matched by their text (a conversation's turns by their conversation and place too), so a run over a whole
split and a run over a filtered copy of it (``benchmarks/load_postgres.py`` leaves out gold queries that do not
transpile) compare like with like. For each program: execution accuracy in each run on the shared questions, the
questions right in one run only, and the two-sided sign test on those.
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
        record["match_key"] = record["question"]
        if record.get("turn") is not None:  # a conversation's turn: its text recurs in other conversations
            record["match_key"] = (record["interaction"], record["turn"], record["question"])
        programs.setdefault(program, []).append(record)
    return programs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="an evaluate --out folder")
    parser.add_argument("second", type=Path, help="another evaluate --out folder")
    parser.add_argument("--program", action="append", help="programs to compare (default: those in both runs)")
    parser.add_argument("--pair", action="append", metavar="FIRST=SECOND",
                        help="compare program FIRST of the first run with program SECOND of the second")
    args = parser.parse_args(argv)
    first, second = by_program(args.first), by_program(args.second)
    pairs = [tuple(pair.split("=", 1)) for pair in args.pair or [] if "=" in pair]
    if args.pair and len(pairs) != len(args.pair):
        parser.error("--pair takes FIRST=SECOND, two program names")
    if not pairs:
        pairs = [(p, p) for p in (args.program or [p for p in first if p in second])]
    missing = [a for a, _ in pairs if a not in first] + [b for _, b in pairs if b not in second]
    if missing:
        print(f"not in the runs: {', '.join(missing)}", file=sys.stderr)
        return 2
    out = {}
    print(f"{'program':<12} {'shared':>6} {args.first.name:>16} {args.second.name:>16} {'only 1st':>8} {'only 2nd':>8} "
          f"{'sign p':>7}")
    for program, other in pairs:
        paired = paired_comparison(first[program], second[other], key="match_key")
        n = paired["questions"]
        label = program if program == other else f"{program}={Path(other).name}"
        print(f"{label:<12} {n:6d} {paired['reference_correct'] / n:16.1%} {paired['other_correct'] / n:16.1%} "
              f"{paired['lost']:8d} {paired['gained']:8d} {paired['sign_test_p']:7.3f}")
        out[label] = paired
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
