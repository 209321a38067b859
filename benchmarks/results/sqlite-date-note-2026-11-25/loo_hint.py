"""Dev harness: leave-one-out drafting on bundled TRAIN or DEV questions (never test), with or without the SQLite date note.
Usage: loo_hint.py NAME SPLIT which(dates|fixed30) hint(0/1) k"""
import json, sys, time, random
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.db import source as src
name, split, which, hint, k = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5])
NOTE = ("-- SQLite keeps dates and times as text: take a duration with julianday(end) - julianday(start) "
        "(in days; * 24 for hours, * 1440 for minutes), shift a time with datetime(t, '+1 hour'), and take "
        "its parts with strftime('%Y', t).")
if hint:
    orig = src.DataSource.with_header
    def with_header(self, schemas):
        text = orig(self, schemas)
        head, rest = text.split("\n\n", 1)
        return f"{head}\n{NOTE}\n\n{rest}"
    src.DataSource.with_header = with_header
db = str(ensure_bundled_database())
tr = json.load(open(f'/work/main/data/{split}.json'))
if which == "fixed30":
    random.Random(7).shuffle(tr); qs = tr[:30]
else:
    qs = [x for x in tr if any(f in x['query'].lower() for f in ('julianday', 'datetime(', 'strftime', 'date('))]
store = ExampleStore('/work/runs/bundled/v2-store.examples.sqlite')
p = make_program("baseline", db_path=db, examples=store if k else None, k_examples=k)
if p.selector is not None:
    p.selector.exclude_same_question = True
out = open(f'/work/dev/{name}.jsonl', 'w'); right = 0; t0 = time.time()
for i, x in enumerate(qs):
    r = p.run(x['question'])
    c = compare_execution(r['query'] or '', x['query'], db)
    right += c.match
    out.write(json.dumps({"i": i, "q": x['question'], "gold": x['query'], "pred": r['query'], "match": c.match, "calls": r.get('lm_calls'), "lat": r['latency_s']}) + "\n"); out.flush()
    print(i, c.match, round(r['latency_s'], 1), flush=True)
print(f"{name}: {right}/{len(qs)} in {time.time()-t0:.0f}s")
