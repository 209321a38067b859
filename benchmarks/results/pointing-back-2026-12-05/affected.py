#!/usr/bin/env python
"""The conversations a follow-up's pointing-back rewrite can touch, as split files: those with a turn whose recorded
stand-alone rewrite points back at the conversation (``points_back``). A turn whose rewrite does not is drafted as
before, and the rewrite is greedy, so the other conversations are answered as before. Training: the CoSQL turns of
``../verifier-data-2026-12-05b/`` (collected at 914cbe2-8148d1f). Held out, reported only: the SParC records of
``../verifier-live-2026-12-04/after/`` (V2 at 57f548c). Writes OUT/{cosql,sparc}/affected.json beside links to
their databases. Run from the repository root:

    python benchmarks/results/pointing-back-2026-12-05/affected.py OUT
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from text2sql_dspy.programs.conversation import points_back

SETS = Path("../shared/benchmarks").resolve()
RECORDS = {"cosql": (Path("benchmarks/results/verifier-data-2026-12-05b/cosql-train.jsonl.gz"), "cosql-train",
                     "train.json", "spider-train"),
           "sparc": (Path("benchmarks/results/verifier-live-2026-12-04/after/sparc/records.jsonl.gz"), "sparc-public",
                     "dev.json", "spider-public")}


def rewrites(record: dict) -> list[str]:
    steps = (record.get("answer") or record).get("steps", [])
    return [s["note"] for s in steps if s["kind"] == "rewrite"]


def main(out: Path) -> None:
    for name, (path, data, split, databases) in RECORDS.items():
        records = [json.loads(line) for line in gzip.open(path, "rt") if line.strip()]
        touched = sorted({r["interaction"] for r in records if any(points_back(q) for q in rewrites(r))})
        conversations = json.loads((SETS / data / split).read_text())
        chosen = [conversations[i] for i in touched]
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for link in ("database", "tables.json"):
            if (SETS / databases / link).exists() and not (folder / link).exists():
                (folder / link).symlink_to(SETS / databases / link)
        (folder / "affected.json").write_text(json.dumps(chosen, indent=1))
        turns = sum(len(c["interaction"]) for c in chosen)
        hits = sum(points_back(q) for r in records for q in rewrites(r))
        print(f"{name}: {hits} rewrites point back, in {len(chosen)} conversations of {turns} turns")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
