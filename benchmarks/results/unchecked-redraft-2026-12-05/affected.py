#!/usr/bin/env python
"""The questions whose redraft was never checked because readings the program made itself (a regrouped or a
loosened query) had spent the validation budget, as split files. Read from records: the merged run of
``../merged-gap-2026-12-05/`` and the SParC dev run of ``../verifier-live-2026-12-05/after/``; a SParC turn brings
its whole conversation. Writes OUT/merged/affected.json (beside a link to MERGED's database folder) and
OUT/sparc/affected.json (beside links to spider-public's). Run from the repository root:

    python benchmarks/results/unchecked-redraft-2026-12-05/affected.py OUT MERGED_DATA
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

SETS = Path("../shared/benchmarks").resolve()
MADE = {"regroup", "loosen"}  # the steps of readings the program makes itself


def affected(path: Path) -> list[dict]:
    """Records with a redraft that no check follows, after a reading the program made."""
    found = []
    for line in gzip.open(path, "rt"):
        record = json.loads(line)
        steps = record.get("steps") or []
        checked = {s["sql"] for s in steps if s["kind"] == "check"}
        drafted = {s["sql"] for s in steps if s["kind"] in ("draft", "sample", "standalone", "redraft")}
        made = any(s["kind"] in MADE for s in steps) or bool(checked - drafted)  # a loosened query that gave no rows
        if made and any(s["kind"] == "redraft" and s.get("sql") and s["sql"] not in checked for s in steps):
            found.append(record)
    return found


def main(out: Path, merged_data: Path) -> None:
    merged = affected(Path("benchmarks/results/merged-gap-2026-12-05/merged/records.jsonl.gz"))
    questions = json.loads((merged_data / "dev.json").read_text())
    folder = out / "merged"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "database").exists():
        (folder / "database").symlink_to((merged_data / "database").resolve())
    (folder / "affected.json").write_text(json.dumps([questions[r["index"]] for r in merged], indent=1))
    print(f"merged: questions {[r['index'] for r in merged]}")
    sparc = affected(Path("benchmarks/results/verifier-live-2026-12-05/after/sparc/records.jsonl.gz"))
    conversations = json.loads((SETS / "sparc-public" / "dev.json").read_text())
    touched = sorted({r["interaction"] for r in sparc})
    folder = out / "sparc"
    folder.mkdir(parents=True, exist_ok=True)
    for link in ("database", "tables.json"):
        if (SETS / "spider-public" / link).exists() and not (folder / link).exists():
            (folder / link).symlink_to(SETS / "spider-public" / link)
    (folder / "affected.json").write_text(json.dumps([conversations[i] for i in touched], indent=1))
    print(f"sparc: turns {[(r['interaction'], r['turn']) for r in sparc]}, conversations {touched}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
