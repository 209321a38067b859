#!/usr/bin/env python
"""The held-out questions the aggregate repairs can touch, as split files: those whose V2 answer at 57f548c
(``../verifier-live-2026-12-04/after/``) has a reading the database refused with "misuse of aggregate" (for SParC,
the whole conversations that hold such a turn). A question without one is answered as before: no valid reading
changes (``training.py``). Writes OUT/{spider-dev,bird-on,sparc}/affected.json beside links to each set's
databases. Run from the repository root:

    python benchmarks/results/ungrouped-aggregate-2026-12-05/affected.py OUT
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

LIVE = Path("benchmarks/results/verifier-live-2026-12-04/after")
SETS = Path("../shared/benchmarks").resolve()


def touched(record: dict) -> bool:
    return any("misuse of aggregate" in json.dumps(r.get("findings", [])) for r in record.get("readings", []))


def main(out: Path) -> None:
    for name, data in (("spider-dev", "spider-public"), ("bird-on", "bird-public"), ("sparc", "sparc-public")):
        records = [json.loads(line) for line in gzip.open(LIVE / name / "records.jsonl.gz", "rt")]
        questions = json.loads((SETS / data / "dev.json").read_text())
        if name == "sparc":
            chosen = [questions[i] for i in sorted({r["interaction"] for r in records if touched(r)})]
        else:
            chosen = [questions[i] for i, r in enumerate(records) if touched(r)]
            assert all(q["question"] == r["question"] for q, r in zip(chosen, [r for r in records if touched(r)]))
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for link in ("database", "tables.json"):
            if (SETS / data / link).exists() and not (folder / link).exists():
                (folder / link).symlink_to(SETS / data / link)
        (folder / "affected.json").write_text(json.dumps(chosen, indent=1))
        if name == "sparc":
            print(f"{name}: {len(chosen)} conversations, {sum(len(q['interaction']) for q in chosen)} turns")
        else:
            print(f"{name}: {len(chosen)} questions")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
