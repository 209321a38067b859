"""Cross-fitted store against no store on all 129 bird-public dev questions: accuracy with the sign test, latency.

    python summary.py RUNS     # RUNS holds S1/, S2/ (with the other half's pairs as the store) and N/ (no store)

Questions are matched by their text (S2 answered questions 61-129 from its own split file). Latency: the three
runs went side by side, so S1 and S2 each ran beside N; per-question ratios pair a question's two latencies.
"""
import json
import statistics as st
import sys
from pathlib import Path

from text2sql_dspy.optimize.report import paired_comparison


def records(folder: Path) -> list[dict]:
    path = folder / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


runs = Path(sys.argv[1])
store = records(runs / "S1") + records(runs / "S2")
plain = {r["question"]: r for r in records(runs / "N")}
pairs = [(plain[r["question"]], r) for r in store if r["question"] in plain]
halves = {"questions 1-60": {r["question"] for r in records(runs / "S1")},
          "questions 61-129": {r["question"] for r in records(runs / "S2")}}
print(f"answered with the store {len(store)}, without {len(plain)}, both {len(pairs)}")
for label, keep in [("all", None), *halves.items()]:
    chosen = [(n, s) for n, s in pairs if keep is None or s["question"] in keep]
    if not chosen:
        continue
    c = paired_comparison([n for n, _ in chosen], [s for _, s in chosen], key="question")
    q = c["questions"]
    print(f"{label}: no store {c['reference_correct']}/{q} ({c['reference_correct'] / q:.1%}), store "
          f"{c['other_correct']}/{q} ({c['other_correct'] / q:.1%}), {100 * (c['other_correct'] - c['reference_correct']) / q:+.1f} "
          f"points; {c['gained']} gained, {c['lost']} lost, sign test p = {c['sign_test_p']:.3g}")
no_query = lambda rs: sum(1 for r in rs if not (r.get("query") or "").strip())
runs_not = lambda rs: sum(1 for r in rs if not r.get("executes"))
print(f"final answers that do not execute: no store {runs_not([n for n, _ in pairs])}, store {runs_not([s for _, s in pairs])}; "
      f"no query: {no_query([n for n, _ in pairs])}, {no_query([s for _, s in pairs])}")
lat_n = [n["latency_s"] for n, _ in pairs]
lat_s = [s["latency_s"] for _, s in pairs]
print(f"median latency: no store {st.median(lat_n):.1f} s, store {st.median(lat_s):.1f} s, ratio of medians "
      f"{st.median(lat_s) / st.median(lat_n):.2f}; median of per-question ratios {st.median(s / n for s, n in zip(lat_s, lat_n)):.2f}")
for name, rs in (("no store", [n for n, _ in pairs]), ("store", [s for _, s in pairs])):
    calls = sum(r["lm_calls"] for r in rs)
    print(f"{name}: median LM calls {st.median(r['lm_calls'] for r in rs)}, median prompt tokens a question "
          f"{st.median(r['prompt_tokens'] for r in rs)}, prompt tokens a call {round(sum(r['prompt_tokens'] for r in rs) / calls)}")
