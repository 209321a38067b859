"""Approximate, offline: how the unsure rule's margin would trade unsure answers against "either reading right".

Re-scores each kept record's judged readings with choice_score's formula (0.5 judge + 0.5 vote share, less 0.3 for a
symptom) and counts answers whose two best are within each margin. It cannot replay the redraft that clears the
readings, so its margin 0.1 row differs from the records' own unsure answers (unsure.py).

Usage (from the repository root): python benchmarks/results/unsure-readings-2026-11-27/margin.py RECORDS.jsonl ...
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from text2sql_dspy.programs.db.literals import MISSING_VALUE  # noqa: E402
from text2sql_dspy.programs.db.query_warnings import SHOWS_KEY  # noqa: E402
from unsure import right as rows_match, source  # noqa: E402

cache = {}


def right(db, sql, gold):
    if (db, sql, gold) not in cache:
        cache[db, sql, gold] = rows_match(source(db), sql, gold)
    return cache[db, sql, gold]


margins = [0.1, 0.15, 0.2, 0.25, 0.3, 0.4]
rows = []
for rec in sys.argv[1:]:
    for line in open(rec):
        r = json.loads(line)
        if not r.get("query"):
            continue
        judged = [x for x in r["readings"] if x["valid"] and x["judge_score"] is not None]
        total = sum(x["votes"] for x in r["readings"] if x["valid"]) or 1
        def score(x):
            sym = any(MISSING_VALUE in f or SHOWS_KEY in f for f in x["findings"])
            return 0.5 * x["judge_score"] + 0.5 * x["votes"] / total - (0.3 if sym else 0)
        judged.sort(key=lambda x: -score(x))
        chosen = r["query"]
        gap = score(judged[0]) - score(judged[1]) if len(judged) >= 2 else None
        other = next((x["sql"] for x in judged[:2] if x["sql"] != chosen), None) if len(judged) >= 2 else None
        rows.append((gap, bool(r["correct"]), (other is not None and right(r["db_id"], other, r["gold"])), chosen in [x["sql"] for x in judged[:2]]))
print("records", len(rows))
for m in margins:
    sel = [x for x in rows if x[0] is not None and x[0] < m and x[3]]
    first = sum(x[1] for x in sel); either = sum(x[1] or x[2] for x in sel)
    print(f"margin {m:.2f}: unsure {len(sel)} ({len(sel)/len(rows):.1%}), first right {first}, either right {either}, "
          f"gain {(either-first)/max(1,len(sel)):.1%}")
