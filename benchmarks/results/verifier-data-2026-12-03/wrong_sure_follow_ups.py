#!/usr/bin/env python
"""The follow-up answers the shipped verifier calls likely right (one draft settles them, at the early follow-up
cut-off) and that are wrong, among the CoSQL turns of ``../verifier-data-2026-12-02/`` it was not fitted on: each
with its question, the program's previous query, its query and gold. Run from the repository root:

    git show 8dc82d7:programs/agents/verifier.json > /tmp/verifier-shipped-8dc82d7.json
    python benchmarks/results/verifier-data-2026-12-03/wrong_sure_follow_ups.py > wrong-sure-follow-ups.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, "benchmarks")
from fit_verifier import examples, lines  # noqa: E402
from replay_training import replayed, scores_of  # noqa: E402

from text2sql_dspy.programs.agents.verifier import Verifier  # noqa: E402

RESULTS = Path("benchmarks/results")
FITTED_ON = [RESULTS / "verifier-data-2026-11-29" / name
             for name in ("spider-train.jsonl.gz", "spider-train-shuffled.jsonl.gz", "cosql-train.jsonl.gz")]
TURNS = RESULTS / "verifier-data-2026-12-02" / "cosql-train.jsonl.gz"
ROOTS = [Path("../shared/benchmarks/spider-train")]


def main() -> int:
    seen = {q["key"] for q in examples(FITTED_ON, ROOTS)}
    records = {(r["db_id"], r["index"], r.get("question"), r.get("turn")): r for r in map(json.loads, lines(TURNS))}
    turns = [q for q in examples([TURNS], ROOTS) if q["key"] not in seen and q["turn"]]
    verifier = Verifier.from_json(json.loads(Path("/tmp/verifier-shipped-8dc82d7.json").read_text()))
    cut = verifier.sure_at(early=True, follow_up=True)
    chosen = replayed(turns, *scores_of(turns, verifier, refit=False), verifier.early_sure)
    wrong = [(q, c) for q, c in zip(turns, chosen, strict=True) if c and c.early and c.p >= cut and not c.right]
    for q, c in wrong:
        record = records[q["key"]]
        print(f"--- {q['db']} p={c.p:.3f}\nQ: {record['question']}\nprev: {q['texts'][0][2] if q['texts'] else ''}\n"
              f"SQL: {record['answer']['sql']}\nGOLD: {record['gold']}")
    print(len(wrong))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
