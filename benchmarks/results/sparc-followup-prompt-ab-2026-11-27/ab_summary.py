"""The follow-up prompt A/B on SParC dev's every 8th conversation: base against prompt, on the turns both answered.

    python ab_summary.py FOLDER      # FOLDER holds base/ and prompt/ (evaluate --out folders, history on)
"""
import json
import sys
from pathlib import Path

from scipy.stats import binomtest

folder = Path(sys.argv[1])
runs = {v: {(r["interaction"], r["turn"]): r for r in map(json.loads, open(folder / v / "records.jsonl"))}
        for v in ("base", "prompt")}
keys = sorted(set(runs["base"]) & set(runs["prompt"]))
data = json.loads((folder / "sparc8" / "dev.json").read_text())
print(f"turns both answered: {len(keys)}")
for label, chosen in (("all turns", keys), ("first turns", [k for k in keys if k[1] == 0]),
                      ("later turns", [k for k in keys if k[1] > 0])):
    a = [bool(runs["base"][k]["correct"]) for k in chosen]
    b = [bool(runs["prompt"][k]["correct"]) for k in chosen]
    gained = sum(y and not x for x, y in zip(a, b))
    lost = sum(x and not y for x, y in zip(a, b))
    p = binomtest(gained, gained + lost).pvalue if gained + lost else 1.0
    print(f"{label}: base {sum(a)}/{len(a)}, prompt {sum(b)}/{len(b)}; {gained} gained, {lost} lost, sign test p = {p:.3g}")
convs = {}
for k in keys:
    convs.setdefault(k[0], []).append(k)
whole = [i for i, ks in convs.items() if len(ks) == len({k for k in runs["base"] if k[0] == i}) and
         len(ks) == len({k for k in runs["prompt"] if k[0] == i})]
for v in ("base", "prompt"):
    right = sum(all(runs[v][k]["correct"] for k in convs[i]) for i in whole)
    print(f"interactions every turn right, {v}: {right} of {len(whole)} answered conversations")
