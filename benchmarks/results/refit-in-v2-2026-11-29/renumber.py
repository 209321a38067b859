#!/usr/bin/env python
"""A SParC dev run's records over all ten databases, cut to the five of ``run.sh``'s ``sparc-clean`` set and numbered
as that set numbers them (interactions and indexes in file order), so ``verdict_table.py`` pairs them with a run of it.

    python renumber.py FULL_RUN SPARC_DEV_JSON OUT_RUN   (FULL_RUN: records.jsonl[.gz]; OUT_RUN gets records.jsonl)
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

CLEAN = ("cre_Doc_Template_Mgt", "concert_singer", "pets_1", "network_1", "tvshow")


def main(full: Path, dev: Path, out: Path) -> int:
    kept = [number for number, c in enumerate(json.loads(dev.read_text())) if c["database_id"] in CLEAN]
    new_number = {old: new for new, old in enumerate(kept)}
    path = full / "records.jsonl"
    text = path.read_text() if path.is_file() else gzip.decompress((full / "records.jsonl.gz").read_bytes()).decode()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    rows = sorted((r for r in rows if r["interaction"] in new_number), key=lambda r: (r["interaction"], r["turn"]))
    out.mkdir(parents=True, exist_ok=True)
    with (out / "records.jsonl").open("w", encoding="utf-8") as fh:
        for index, r in enumerate(rows):
            fh.write(json.dumps({**r, "interaction": new_number[r["interaction"]], "index": index}) + "\n")
    print(f"{len(rows)} turns of {len(kept)} conversations written to {out / 'records.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*map(Path, sys.argv[1:4])))
