"""Key findings (programs/db/query_warnings.key_warnings, and keys_shown: only where the question asks for no id)
on every gold query, and on V2 answers of earlier runs. No model call.

    python benchmarks/results/key-warning-2026-11-26/check.py RECORDS,DATA,SPLIT ...   # DATA "bundled" for data/
"""
import json, sys, sqlglot
from text2sql_dspy.programs.db.query_warnings import key_warnings, keys_shown
from text2sql_dspy.programs.db.source import open_source
from text2sql_dspy.programs.dataset import load_split
cache = {}
def src(p): return cache.get(p) or cache.setdefault(p, open_source(p))
def warn(sql, s):
    try: return key_warnings(sqlglot.parse_one(sql, read="sqlite"), s.catalog)
    except Exception: return []
tot = hit = hitq = 0; sets = {}
for data, splits in [("/work/shared/benchmarks/spider-public", ["dev", "train"]), ("/work/shared/benchmarks/bird-public", ["dev"]), (None, ["train", "dev", "test"])]:
    for split in splits:
        exs = load_split(data, split) if data else load_split(split=split); sets[(data, split)] = exs
        for ex in exs:
            tot += 1
            if warn(ex.gold_sql, src(ex.db_path)):
                hit += 1
                if keys_shown(ex.gold_sql, src(ex.db_path).catalog, ex.question): hitq += 1; print("GOLD", ex.db_id, "|", ex.question, "|", ex.gold_sql[:120])
print(tot, "gold queries,", hit, "with a key warning,", hitq, "of them with a question that asks for no id")
for spec in sys.argv[1:]:
    path, data, split = spec.split(",")
    exs = sets[(None if data == "bundled" else data, split)]
    n = right = nq = rq = answered = 0
    for r in map(json.loads, open(path)):
        if not r.get("query") or r.get("program") != "v2": continue
        answered += 1
        if warn(r["query"], src(exs[r["index"]].db_path)):
            n += 1; right += bool(r["correct"])
            if keys_shown(r["query"], src(exs[r["index"]].db_path).catalog, r["question"]): nq += 1; rq += bool(r["correct"])
    print(path.split("results/")[-1], "| v2 answers", answered, "| key warning", n, "right", right, "| and the question asks for no id", nq, "right", rq)
