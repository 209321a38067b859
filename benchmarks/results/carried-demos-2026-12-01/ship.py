#!/usr/bin/env python
"""Write the package's worked examples (``programs/agents/worked_examples.json``) from a compile with carried demos.

    python benchmarks/results/carried-demos-2026-12-01/ship.py OUT/compiled/v2-carried.json

Only the drafting demos are shipped, with ``fitted_on``: the training set, its questions and databases, the budget,
the seed, the date and a digest of the demos. Run twice on the same compile, it writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from text2sql_dspy.programs.agents.carried import SHIPPED, is_carried
from text2sql_dspy.programs.agents.registry import metadata_path

FIELDS = ("table_schemas", "facts", "question", "hints", "sql")  # the drafting signature's, as shown


def main(compiled: Path) -> int:
    meta = json.loads(metadata_path(compiled).read_text())
    if not meta.get("carried_demos"):
        sys.exit(f"{compiled} was not compiled with --carry-demos: its demos are not marked to carry.")
    demos = [{k: demo[k] for k in FIELDS if k in demo} for demo in json.loads(compiled.read_text())["draft"]["demos"]]
    assert all(is_carried(demo) for demo in demos)
    digest = hashlib.sha256(json.dumps(demos, sort_keys=True).encode()).hexdigest()[:16]
    shipped = {
        "fitted_on": {
            "sets": [Path(meta["data"]).name], "questions": meta["train_size"],
            "questions_tried": meta["trace_audit"]["traces"],
            "databases": len(meta["train_databases"]), "optimizer": meta["optimizer"], "metric": meta["metric"],
            "budget": meta["budget"], "seed": meta["seed"], "wrong_demos_dropped": meta["wrong_demos_dropped"],
            "date": meta["date"][:10], "digest": digest,
        },
        "draft": demos,
    }
    target = Path(__file__).resolve().parents[3] / "programs" / "agents" / SHIPPED
    target.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target}: {len(demos)} drafting demos, digest {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
