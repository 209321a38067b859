"""Per arm of run.sh: how often every gold table was shown, how many tables of another database, and whether the
questions right in one arm only had their gold tables shown in both.

    python benchmarks/results/question-adapter-2026-12-02/shown.py OUT [BEFORE-LABEL AFTER-LABEL]
"""

import json
import sys

from text2sql_dspy.programs.query.tables_read import tables_read

out = sys.argv[1]
own = [q["db_id"] for q in json.load(open(f"{out}/data/own.json"))]


def load(arm):
    return {r["index"]: r for r in map(json.loads, open(f"{out}/{arm}/records.jsonl"))}


def gold(r):
    return {t.lower() for t in tables_read(r["gold"])}


def shown(r):
    return {t.lower() for t in r["tables"]}


b, a = load("before"), load("after")
labels = sys.argv[2:4] if len(sys.argv) >= 4 else ["before (no adapter)", "after (adapter)"]
for name, d in zip(labels, (b, a)):
    every = sum(gold(r) <= shown(r) for r in d.values())
    other = sum(sum(not t.startswith(own[i].lower() + "__") for t in shown(r)) for i, r in d.items()) / len(d)
    size = sum(len(shown(r)) for r in d.values()) / len(d)
    print(f"{name}: every gold table shown for {every}/{len(d)}; tables shown, mean {size:.2f}, "
          f"of another database {other:.2f}")
diff = [i for i in b if b[i]["correct"] != a[i]["correct"]]
both = [i for i in diff if gold(b[i]) <= shown(b[i]) and gold(a[i]) <= shown(a[i])]
print(f"questions right in one run only: {len(diff)} (indexes {sorted(diff)}); every gold table shown in both runs "
      f"for {len(both)} of them")
