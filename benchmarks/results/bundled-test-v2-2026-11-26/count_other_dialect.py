"""Readings (every query a run considered) that use EXTRACT(...) or that SQLite refused as YEAR(...), over every
records.jsonl under benchmarks/results/. Usage (repository root): python benchmarks/results/bundled-test-v2-2026-11-26/count_other_dialect.py"""

import glob
import json

extract = year = 0
for path in glob.glob("benchmarks/results/**/records.jsonl", recursive=True):
    for line in open(path, encoding="utf-8"):
        record = json.loads(line)
        for reading in record.get("readings") or []:
            extract += "EXTRACT(" in reading["sql"].upper()
            year += "no such function: YEAR" in " ".join(reading.get("findings") or [])
print(f"EXTRACT: {extract} readings; 'no such function: YEAR': {year} readings")
