"""Offline replay of the column-spelling rule (``_respell`` in programs/db/requalify.py), no model.

Prints the gold queries ``requalified`` changes (none should: Spider public dev and train, bird-public, the
bundled splits), then, per kept run, the failed answers (no valid query) that one of their readings, respelled,
turns into a valid query, and whether that query's rows match the gold query's on the SQLite copy.

Usage (from the repository root): python benchmarks/results/respelled-columns-2026-11-27/replay.py RECORDS.jsonl ...
"""
import json
import sys
from pathlib import Path

from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.db.requalify import requalified
from text2sql_dspy.programs.db.results import is_ordered, results_match
from text2sql_dspy.programs.db.source import open_source

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "benchmarks"
sources = {}


def source(db_id):
    if db_id not in sources:
        found = [p for p in SHARED.glob(f"*/database/{db_id}/{db_id}.sqlite")]
        sources[db_id] = open_source(found[0] if found else ensure_bundled_database())
    return sources[db_id]


gold = [(e["db_id"], e.get("SQL") or e["query"]) for f in [SHARED / "spider-public/dev.json",
        SHARED / "spider-public/train.json", SHARED / "bird-public/dev.json", Path("data/train.json"),
        Path("data/dev.json"), Path("data/test.json")] for e in json.loads(f.read_text())]
changed = [(db, sql) for db, sql in gold if requalified(sql, source(db).catalog) != sql]
print(f"gold queries: {len(gold)}, changed: {len(changed)}", *changed, sep="\n")
for records in sys.argv[1:]:
    failed = fixed = right = 0
    for line in open(records):
        r = json.loads(line)
        if r.get("valid"):
            continue
        failed += 1
        src = source(r["db_id"])
        for reading in r.get("readings", []):
            new = requalified(reading["sql"], src.catalog)
            if new != reading["sql"] and src.validator.validate(new).valid:
                ok = results_match(src.database.execute(new), src.database.execute(r["gold"]), ordered=is_ordered(r["gold"]))
                fixed, right = fixed + 1, right + ok
                print(f"  {r['db_id']}: {'right' if ok else 'wrong'}: {r['question'][:60]} | {new}")
                break
    print(f"{records}: failed {failed}, a reading now valid {fixed}, of them right {right}")
