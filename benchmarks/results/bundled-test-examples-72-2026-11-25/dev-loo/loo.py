"""Dev harness: leave-one-out drafting on bundled TRAIN questions (never test). Usage: loo.py NAME N k mask [program]"""
import json, sys, time, random
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.examples.selector import ExampleSelector
from text2sql_dspy.optimize.metrics import compare_execution
name, n, k, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
prog = sys.argv[5] if len(sys.argv) > 5 else "baseline"
db = str(ensure_bundled_database())
tr = json.load(open('/work/main/data/train.json'))
random.Random(7).shuffle(tr)
qs = tr[:n]
store = ExampleStore('/work/runs/bundled/v2-store.examples.sqlite')
p = make_program(prog, db_path=db, examples=store if k else None, k_examples=k, mask_examples=mask)
if p.selector is not None:
    p.selector.exclude_same_question = True
out = open(f'/work/dev/{name}.jsonl', 'w'); right = 0; t0 = time.time()
for i, x in enumerate(qs):
    r = p.run(x['question'])
    c = compare_execution(r['query'] or '', x['query'], db)
    right += c.match
    out.write(json.dumps({"i": i, "q": x['question'], "gold": x['query'], "pred": r['query'], "match": c.match, "calls": r.get('lm_calls'), "lat": r['latency_s']}) + "\n"); out.flush()
    print(i, c.match, round(r['latency_s'], 1), flush=True)
print(f"{name}: {right}/{n} in {time.time()-t0:.0f}s")
