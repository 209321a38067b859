"""Run from the repository root: python benchmarks/results/one-part-view-2026-12-02/part_whole.py

Out of fold on spider-train: how often the top hit's linked part, shown whole (where it fits), holds every gold
table, against today's top-k view and the top-k view cut to that part."""
import sys, statistics
sys.path.insert(0, "benchmarks")
from pathlib import Path
import fit_linker as F
from text2sql_dspy.programs.retrieval.schema_view import estimated_tokens

folds = F.fold_rows(Path("../shared/benchmarks/spider-train"), 5, 15)
rows = [r for f in folds for r in f]
for budget in (1500, 2500, 4000):
  for k in (3, 5):
    a = c = g = named = 0; full_sizes = []; foreign = []
    for r in rows:
        cat = r["catalog"]; parts = r.setdefault("parts", cat.parts())
        scores = F.blend(r)
        got = F.shown(cat, scores, k)
        top = max(scores, key=lambda t: scores[t]).lower()
        p = parts.get(top)
        a += r["gold"] <= got
        if p is None or len({parts.get(t) for t in got} - {None}) <= 1:
            full = got
        else:
            members = [t for t in cat.tables if parts.get(t.name.lower()) == p]
            whole = {t.name.lower() for t in members}
            fits = estimated_tokens("\n\n".join(t.render() for t in members)) <= budget
            full = (whole if fits else {t for t in got if parts.get(t) == p}) | {t for t in got if parts.get(t) is None}
        g += r["gold"] <= full
        named += r["gold"] <= (full | got)
        full_sizes.append(len(full)); foreign.append(sum(not t.startswith(r["db"].lower() + "__") for t in full))
    n = len(rows)
    print(f"budget {budget} k={k}: today all gold {a/n:.3f}; G all gold in full view {g/n:.3f}, in full or named {named/n:.3f}; "
          f"full tables {statistics.mean(full_sizes):.1f}, of other dbs {statistics.mean(foreign):.2f}", flush=True)
