"""Whole schema against linked tables, question by question: accuracy with a sign test, latency and prompt tokens.

    python benchmarks/results/linked-view-2026-11-29/compare.py
"""

import gzip
import json
import statistics
from pathlib import Path

from text2sql_dspy.optimize.report import paired_comparison

R = Path(__file__).resolve().parent


def load(name: str) -> dict[int, dict]:
    with gzip.open(R / name / "records.jsonl.gz", "rt", encoding="utf-8") as fh:
        return {(r := json.loads(line))["index"]: r for line in fh.read().splitlines()}


whole, linked = load("whole"), load("linked")
both = sorted(set(whole) & set(linked))
paired = paired_comparison([whole[i] for i in both], [linked[i] for i in both])
gained = [i for i in both if linked[i]["correct"] and not whole[i]["correct"]]
lost = [i for i in both if whole[i]["correct"] and not linked[i]["correct"]]
print(f"{paired['questions']} questions answered by both (data/train.json, first {max(both) + 1})")
print(f"right: whole {paired['reference_correct']}, linked {paired['other_correct']}; linked gained {gained}, "
      f"lost {lost}, sign test p = {paired['sign_test_p']:.3f}")
for name, runs in (("whole", whole), ("linked", linked)):
    seconds = [runs[i]["metrics"]["latency_s"] for i in both]
    tokens = [runs[i]["metrics"]["prompt_tokens"] for i in both]
    print(f"{name}: median {statistics.median(seconds):.0f} s a question (first {seconds[0]:.0f} s), "
          f"median prompt tokens {statistics.median(tokens):.0f}")
shown = [len(linked[i]["tables"]) for i in both]
print(f"linked: {statistics.median(shown):.0f} of 31 tables shown (median)")
