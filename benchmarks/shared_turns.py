#!/usr/bin/env python
"""Two arms of a run stopped before its end, cut to the questions (or turns) both answered, so that
``benchmarks/verdict_table.py`` and ``compare_runs.py`` read them on the same ones: writes
DEST/{before,after}/SET/records.jsonl.gz (and copies each arm's ``run.json``) from OUT/{before,after}/SET, as
``benchmarks/evaluate_sets.sh`` lays the arms out. Asks nothing of the model.

    python benchmarks/shared_turns.py OUT SET DEST [--arms before after]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records


def cut(out: Path, name: str, dest: Path, arms: tuple[str, ...] = ("before", "after")) -> int:
    """Write each arm's records of the questions every arm answered, in question order; how many there are."""
    found = {arm: load_records(out / arm / name / "records.jsonl") for arm in arms}
    shared = sorted(set.intersection(*(set(records) for records in found.values())), key=lambda key: key[1])
    for arm, records in found.items():
        folder = dest / arm / name
        folder.mkdir(parents=True, exist_ok=True)
        with gzip.open(folder / "records.jsonl.gz", "wt") as fh:
            fh.writelines(json.dumps(records[key]) + "\n" for key in shared)
        shutil.copy(out / arm / name / "run.json", folder / "run.json")
    return len(shared)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder holding the arms")
    parser.add_argument("set", help="the set's folder name in each arm (spider-dev, sparc, ...)")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--arms", nargs="+", default=["before", "after"])
    args = parser.parse_args(argv)
    print(f"{args.set}: {cut(args.out, args.set, args.dest, tuple(args.arms))} turns answered by both arms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
