#!/usr/bin/env python
"""The records of a collected file that the 2026-12-05 file of the same name lacks (by ``index``): how many, how
many follow-ups, conversations, databases, right, with no query, with a regrouped reading. Run from the repository
root:  python benchmarks/results/verifier-data-2026-12-05b/count_new.py FILE"""
import gzip
import json
import sys
from pathlib import Path

name = Path(sys.argv[1]).name
old = {json.loads(l)["index"] for l in gzip.open(f"benchmarks/results/verifier-data-2026-12-05/{name}", "rt")}
new = [json.loads(l) for l in gzip.open(sys.argv[1], "rt")]
fresh = [r for r in new if r["index"] not in old]
print("records", len(new), "new", len(fresh), "follow-ups", sum(1 for r in fresh if (r.get("turn") or 0) > 0),
      "conversations", len({(r["db_id"], r.get("interaction")) for r in fresh if r.get("interaction") is not None}), "databases", len({r["db_id"] for r in fresh}),
      "right", sum(bool(r.get("correct")) for r in fresh), "no query", sum(not (r.get("answer") or {}).get("sql") for r in fresh),
      "regrouped", sum(any(s["kind"] == "regroup" for s in (r.get("answer") or {}).get("steps", [])) for r in fresh))
