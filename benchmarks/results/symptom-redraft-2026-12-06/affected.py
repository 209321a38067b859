#!/usr/bin/env python
"""The questions a reading showing a symptom (a key shown where no id is asked, a literal the column does not hold)
can change, as split files: those whose recorded V2 answer weighed such a reading. Read from the records of
``../verifier-live-2026-12-05/after/`` (Spider dev, SParC dev, bird-public with evidence) and
``../bird-off-since-filing-2026-12-06/after/`` (bird-public without); a SParC turn brings its whole conversation.
Writes OUT/SET/affected.json beside links to the set's databases. Run from the repository root:

    python benchmarks/results/symptom-redraft-2026-12-06/affected.py OUT
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

SETS = Path("../shared/benchmarks").resolve()
SYMPTOMS = {"shows key", "missing value"}  # programs/agents/candidates.py: SYMPTOMS
RUNS = Path("benchmarks/results")
SOURCES = {  # set: (records, questions file, the folder its databases are in)
    "spider-dev": (RUNS / "verifier-live-2026-12-05/after/spider-dev", SETS / "spider-public" / "dev.json",
                   SETS / "spider-public"),
    "bird-on": (RUNS / "verifier-live-2026-12-05/after/bird-on", SETS / "bird-public" / "dev.json", SETS / "bird-public"),
    "bird-off": (RUNS / "bird-off-since-filing-2026-12-06/after", SETS / "bird-public" / "dev.json", SETS / "bird-public"),
    "sparc": (RUNS / "verifier-live-2026-12-05/after/sparc", SETS / "sparc-public" / "dev.json", SETS / "spider-public"),
}


def affected(folder: Path) -> list[dict]:
    """Records one of whose readings shows a symptom."""
    found = []
    for line in gzip.open(folder / "records.jsonl.gz", "rt"):
        record = json.loads(line)
        kinds = {f.get("kind") for r in record.get("readings") or [] for f in r.get("findings") or []}
        if kinds & SYMPTOMS:
            found.append(record)
    return found


def main(out: Path) -> None:
    for name, (records, questions, databases) in SOURCES.items():
        found = affected(records)
        items = json.loads(questions.read_text())
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for link in ("database", "tables.json"):
            if (databases / link).exists() and not (folder / link).exists():
                (folder / link).symlink_to(databases / link)
        if name == "sparc":
            touched = sorted({r["interaction"] for r in found})
            chosen = [items[i] for i in touched]
            print(f"{name}: {len(found)} turns in {len(touched)} conversations {touched}")
        else:
            chosen = [items[r["index"]] for r in found]
            print(f"{name}: {len(found)} questions {[r['index'] for r in found]}")
        (folder / "affected.json").write_text(json.dumps(chosen, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
