#!/usr/bin/env python
"""Answer a training split with V2 drawing every candidate it may, and keep every reading with whether it is right:
the data the verifier (``programs/agents/verifier.py``) is fitted on.

    python benchmarks/collect_candidates.py --data ../shared/benchmarks/spider-public --split train --out OUT.jsonl
    python benchmarks/collect_candidates.py --data data --split train --out OUT.jsonl     # the bundled train split

V2 here samples whatever its first draft's confidence (``sample_below`` above 1) and may judge three result groups,
so each question leaves the readings and verdicts a fully spent V2 would see. One line a question: the
:class:`~text2sql_dspy.programs.answer.Answer` as JSON, the gold SQL, and for each reading whether it returns the
gold query's rows. Rerun with the same ``--out`` to resume. Use only splits that are no one's dev or test set.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tqdm import tqdm

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.dataset import load_split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a Spider-format folder")
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    examples = load_split(args.data, args.split, limit=args.limit)
    done = set()
    if args.out.is_file():
        done = {json.loads(line)["index"] for line in args.out.read_text().splitlines() if line.strip()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    programs: dict[str, ReActAgentV2] = {}
    for index, example in enumerate(tqdm(examples, desc=args.split, unit="q")):
        if index in done:
            continue
        program = programs.setdefault("v2", ReActAgentV2(sample_below=1.01, max_judge_calls=4))
        answer = program.run(example.question, example.db_path, hint=str(example.get("evidence") or ""))
        right = [compare_execution(r.sql, example.gold_sql, example.db_path).match for r in answer.readings]
        line = {"index": index, "db_id": example.db_id, "gold": example.gold_sql, "answer": answer.model_dump(mode="json"),
                "readings_correct": right, "correct": compare_execution(answer.sql, example.gold_sql, example.db_path).match}
        with args.out.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
