"""Median latency of run A against run P on the questions both answered (side by side), and what each call read."""
import json
import statistics as st
import sys
from pathlib import Path


def records(folder: str) -> dict[int, dict]:
    return {r["index"]: r for r in map(json.loads, Path(folder, "records.jsonl").read_text().splitlines())}


full, plain = records(sys.argv[1]), records(sys.argv[2])
both = sorted(set(full) & set(plain))
f = [full[i]["latency_s"] for i in both]
p = [plain[i]["latency_s"] for i in both]
print(f"questions {both[0] + 1}-{both[-1] + 1} ({len(both)}, side by side): median latency "
      f"{sys.argv[1]} {st.median(f):.1f} s, {sys.argv[2]} {st.median(p):.1f} s, ratio {st.median(f) / st.median(p):.2f}")
print(f"median of per-question ratios {st.median(a / b for a, b in zip(f, p)):.2f}")
for name, rs in ((sys.argv[1], full), (sys.argv[2], plain)):
    calls = [rs[i]["lm_calls"] for i in both]
    tokens = [rs[i]["prompt_tokens"] for i in both]
    print(f"{name}: median LM calls {st.median(calls)}, median prompt tokens {st.median(tokens)}, "
          f"per call {round(sum(tokens) / sum(calls))}")
