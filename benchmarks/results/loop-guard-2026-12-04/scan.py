"""Where the repetition guard (``shared_llama.loop_end``, as installed) would cut: every gold query of the benchmark
sets, and every query and cut reply recorded in the verifier's training answers, tokenized by the embedded model's
own tokenizer. Asks nothing of the model. Run from the repository root:

    python benchmarks/results/loop-guard-2026-12-04/scan.py ../shared/benchmarks benchmarks/results/verifier-data-*/*.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import timeit
from pathlib import Path

import llama_cpp

from text2sql_dspy.programs.llm.model_files import ensure_local_model
from text2sql_dspy.programs.llm.shared_llama import LOOP_WINDOW, loop_end, repeats_itself


def gold_queries(root: Path) -> dict[str, list[str]]:
    """Each set's gold SQL, by file: Spider's ``query``, BIRD's ``SQL``, a conversation's turns' ``query``."""
    sets: dict[str, list[str]] = {}
    for path in sorted(root.glob("*/*.json")):
        if path.name == "tables.json":
            continue
        queries = []
        for item in json.loads(path.read_text()):
            for turn in item.get("interaction") or [item]:
                sql = turn.get("query") or turn.get("SQL")
                if sql:
                    queries.append(sql)
        sets[f"{path.parent.name}/{path.name}"] = queries
    return sets


def recorded_queries(paths: list[Path]) -> tuple[list[str], list[str]]:
    """The distinct valid readings, and the distinct replies recorded as cut (an invalid reading or a step's query)."""
    valid, invalid = set(), set()
    for path in paths:
        for line in gzip.open(path, "rt"):
            answer = json.loads(line)["answer"]
            for reading in answer.get("readings") or []:
                (valid if reading["valid"] else invalid).add(reading["sql"])
            for step in answer.get("steps") or []:
                if step.get("sql"):
                    invalid.add(step["sql"]) if step["sql"] not in valid else None
    return sorted(valid), sorted(invalid - valid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmarks", type=Path)
    parser.add_argument("records", type=Path, nargs="*")
    args = parser.parse_args()
    vocab = llama_cpp.Llama(str(ensure_local_model(progress=False)), vocab_only=True, verbose=False)

    def cut_at(sql: str) -> tuple[int, int | None]:
        tokens = vocab.tokenize(sql.encode(), add_bos=False)
        return len(tokens), loop_end(tokens)

    tail = vocab.tokenize(" ".join(q for qs in gold_queries(args.benchmarks).values() for q in qs[:40]).encode(),
                          add_bos=False)[-LOOP_WINDOW:]
    runs = 2000
    seconds = timeit.timeit(lambda: repeats_itself(tail), number=runs) / runs
    print(f"the guard's check on a {len(tail)}-token tail that is no loop: {seconds * 1e6:.0f} us (once a token)\n")
    print("gold queries the guard would cut, by set")
    for name, queries in gold_queries(args.benchmarks).items():
        cut = [q for q in queries if cut_at(q)[1] is not None]
        print(f"  {name:32s} {len(queries):6d} queries, {len(cut)} cut")
        for q in cut[:5]:
            print(f"    {q[:160]}")
    if not args.records:
        return
    valid, invalid = recorded_queries(args.records)
    cut = [q for q in valid if cut_at(q)[1] is not None]
    print(f"\nvalid readings in the training answers: {len(valid)}, cut {len(cut)}")
    for q in cut[:5]:
        print(f"    {q[:160]}")
    print(f"\ninvalid readings and drafts: {len(invalid)}; those the guard cuts, at which token of how many")
    for q in invalid:
        length, end = cut_at(q)
        if end is not None:
            print(f"  {end:4d} of {length:4d}  {q[:110]}")


if __name__ == "__main__":
    main()
