"""The SParC latency run split by whether gold's result is empty (or NULL-only), with the findings on V2's chosen
readings by outcome. Run from the repository root:
    python benchmarks/results/latency-ratio-sparc-2026-12-02/split_by_gold.py [FOLDER]   # split-by-gold.txt
"""
import collections
import gzip
import json
import sqlite3
import statistics
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
spider = Path("../shared/benchmarks/spider-public/database")


def records(program):
    with gzip.open(here / program / "records.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


v2, baseline = records("v2"), {r["index"]: r for r in records("baseline")}
connections = {}


def gold_empty(record):
    db = record["db_id"]
    if db not in connections:
        connections[db] = sqlite3.connect(next((spider / db).glob("*.sqlite")))
    rows = connections[db].execute(record["gold"]).fetchall()
    return not rows or all(v is None for row in rows for v in row)


groups = collections.defaultdict(list)
findings = collections.Counter()
for r in v2:
    groups[gold_empty(r)].append(r)
    for reading in r["readings"]:
        if reading.get("chosen"):
            for finding in reading["findings"]:
                findings[(finding["kind"], r["correct"])] += 1
for empty, rs in sorted(groups.items()):
    mine = statistics.median(r["metrics"]["latency_s"] for r in rs)
    theirs = statistics.median(baseline[r["index"]]["metrics"]["latency_s"] for r in rs)
    print(f"gold {'empty or NULL-only' if empty else 'with rows'}: {len(rs)} turns, V2 right {sum(r['correct'] for r in rs)}, "
          f"median latency V2 {mine:.1f} s, baseline {theirs:.1f} s, ratio {mine / theirs:.2f}, "
          f"V2 redrafts {sum(r['metrics']['redrafts'] for r in rs)}")
for (finding, right), n in sorted(findings.items()):
    print(f"finding on V2's chosen reading: {finding!r}, {'right' if right else 'wrong'} answers: {n}")
