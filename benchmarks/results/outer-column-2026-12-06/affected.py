#!/usr/bin/env python
"""The held-out questions the outer-column lint can change, as split files: those whose recorded V2 answer weighed a
reading it flags. Read from the records of ``../verifier-live-2026-12-05/after/`` (Spider dev, SParC dev, bird-public
with evidence) and ``../bird-off-since-filing-2026-12-06/after/`` (bird-public without); a SParC turn brings its
whole conversation. Writes OUT/SET/affected.json beside links to the set's databases. Run from the repository root:

    python benchmarks/results/outer-column-2026-12-06/affected.py OUT
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from firings import SETS, fires  # noqa: E402

RUNS = Path("benchmarks/results")
SOURCES = {  # set: (records, questions file, the folder its databases are in)
    "spider-dev": (RUNS / "verifier-live-2026-12-05/after/spider-dev", "spider-public/dev.json", "spider-public"),
    "bird-on": (RUNS / "verifier-live-2026-12-05/after/bird-on", "bird-public/dev.json", "bird-public"),
    "bird-off": (RUNS / "bird-off-since-filing-2026-12-06/after", "bird-public/dev.json", "bird-public"),
    "sparc": (RUNS / "verifier-live-2026-12-05/after/sparc", "sparc-public/dev.json", "spider-public"),
}


def affected(folder: Path, root: str) -> list[dict]:
    """Records one of whose readings the lint flags."""
    return [record for line in gzip.open(folder / "records.jsonl.gz", "rt") if (record := json.loads(line))
            and any(fires(r["sql"], root, record["db_id"]) for r in record.get("readings") or [])]


def main(out: Path) -> None:
    for name, (records, questions, root) in SOURCES.items():
        found = affected(records, root)
        items = json.loads((SETS / questions).read_text())
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for link in ("database", "tables.json"):
            if (SETS / root / link).exists() and not (folder / link).exists():
                (folder / link).symlink_to(SETS / root / link)
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
