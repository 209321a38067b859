"""Key warnings (programs/db/query_warnings.key_warnings) on every gold query, and on V2 answers of earlier runs.

    python benchmarks/results/key-warning-2026-11-26/check.py RECORDS,DATA,SPLIT ...   # DATA "bundled" for data/
"""
import json, sys, sqlglot
from text2sql_dspy.programs.db.query_warnings import key_warnings
from text2sql_dspy.programs.db.source import open_source
from text2sql_dspy.programs.dataset import load_split
cache = {}
def src(p): return cache.get(p) or cache.setdefault(p, open_source(p))
def warn(sql, s):
    try: return key_warnings(sqlglot.parse_one(sql, read="sqlite"), s.catalog)
    except Exception: return []
tot = hit = 0
sets = {}
for data, splits in [("/work/shared/benchmarks/spider-public", ["dev", "train"]), ("/work/shared/benchmarks/bird-public", ["dev"]), (None, ["train", "dev", "test"])]:
    for split in splits:
        exs = load_split(data, split) if data else load_split(split=split); sets[(data, split)] = exs
        for ex in exs:
            tot += 1
            if warn(ex.gold_sql, src(ex.db_path)): hit += 1; print("GOLD", ex.db_id, "|", ex.question, "|", ex.gold_sql[:140])
print(tot, "gold queries,", hit, "with a key warning")
for spec in sys.argv[1:]:
    path, data, split = spec.split(",")
    exs = sets[(None if data == "bundled" else data, split)]
    n = right = answered = 0
    for r in map(json.loads, open(path)):
        if not r.get("query") or r.get("program") != "v2": continue
        answered += 1
        if warn(r["query"], src(exs[r["index"]].db_path)): n += 1; right += bool(r["correct"])
    print(path, "v2 answers", answered, "with a key warning", n, "of them right", right)
