#!/usr/bin/env python
"""Two arms of a run stopped before its end, cut to the turns both answered: writes DEST/{before,after}/SET/
records.jsonl.gz (and each arm's run.json) from OUT/{before,after}/SET.

    python benchmarks/results/verifier-live-2026-12-05/shared_turns.py OUT SET DEST
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records


def main(out: Path, name: str, dest: Path) -> None:
    arms = {arm: load_records(out / arm / name / "records.jsonl") for arm in ("before", "after")}
    shared = sorted(set(arms["before"]) & set(arms["after"]), key=lambda key: key[1])
    for arm, records in arms.items():
        folder = dest / arm / name
        folder.mkdir(parents=True, exist_ok=True)
        with gzip.open(folder / "records.jsonl.gz", "wt") as fh:
            fh.writelines(json.dumps(records[key]) + "\n" for key in shared)
        shutil.copy(out / arm / name / "run.json", folder / "run.json")
    print(f"{name}: {len(shared)} turns answered by both arms")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
