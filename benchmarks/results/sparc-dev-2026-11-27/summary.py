"""Issue 35's table from the two runs' records: turns both runs answered (SParC order), with history against alone.

Usage (from the repository root): python benchmarks/results/sparc-dev-2026-11-27/summary.py [FOLDER]
FOLDER holds history-on/ and history-off/ (default: this file's folder). Interaction accuracy counts only the
conversations whose every turn both runs answered.
"""
import json
import sys
from pathlib import Path
from statistics import median

from scipy.stats import binomtest

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
on, off = ([json.loads(line) for line in open(folder / f"history-{h}" / "records.jsonl")] for h in ("on", "off"))
n = min(len(on), len(off))
on, off = on[:n], off[:n]
assert all((a["interaction"], a["turn"]) == (b["interaction"], b["turn"]) for a, b in zip(on, off))
SPARC = Path(__file__).resolve().parents[3].parent / "shared" / "benchmarks" / "sparc-public" / "dev.json"
sizes = [len(c["interaction"]) for c in json.loads(SPARC.read_text())]
done = {i for i in {r["interaction"] for r in on} if sum(r["interaction"] == i for r in on) == sizes[i]}


def share(flags):
    flags = list(flags)
    return f"{sum(flags) / len(flags):.1%} ({sum(flags)} of {len(flags)})" if flags else "–"


def interactions(records):
    conversations = {}
    for r in records:
        if r["interaction"] in done:
            conversations.setdefault(r["interaction"], []).append(bool(r["correct"]))
    return [all(c) for c in conversations.values()]


gained = sum(1 for a, b in zip(off, on) if b["correct"] and not a["correct"])
lost = sum(1 for a, b in zip(off, on) if a["correct"] and not b["correct"])
print(f"turns {n} ({len(done)} whole conversations); machine(s): see chunks.log")
print("| | alone | with history |\n|---|---|---|")
print(f"| turns right | {share(r['correct'] for r in off)} | {share(r['correct'] for r in on)} |")
print(f"| first turns | {share(r['correct'] for r in off if r['turn'] == 0)} | {share(r['correct'] for r in on if r['turn'] == 0)} |")
print(f"| later turns | {share(r['correct'] for r in off if r['turn'] > 0)} | {share(r['correct'] for r in on if r['turn'] > 0)} |")
print(f"| interactions, every turn right | {share(interactions(off))} | {share(interactions(on))} |")
for name, rs in (("alone", off), ("with history", on)):
    first = median(r["latency_s"] for r in rs if r["turn"] == 0)
    later = median(r["latency_s"] for r in rs if r["turn"] > 0)
    print(f"median latency {name}: first turns {first:.1f} s, later turns {later:.1f} s, ratio {later / first:.2f}")
for name, turns in (("first turns (the same prompt in both runs)", [(a, b) for a, b in zip(off, on) if a["turn"] == 0]),
                    ("later turns", [(a, b) for a, b in zip(off, on) if a["turn"] > 0])):
    ratios = [b["latency_s"] / a["latency_s"] for a, b in turns if a["latency_s"]]
    print(f"{name}: median of per-turn latency ratios, with history / alone, {median(ratios):.2f}")
p = binomtest(gained, gained + lost).pvalue if gained + lost else 1.0
print(f"with history against alone: {gained} gained, {lost} lost, sign test p = {p:.2g}")
