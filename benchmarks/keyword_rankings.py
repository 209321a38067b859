#!/usr/bin/env python
"""The keyword retriever's rankings (``make_retriever(catalog, "keyword")``) of every question of a Spider-format
split (``data/``, the bundled one, too) over its own database's tables, written down to compare two versions of the
retriever. Asks nothing of the model.

    python benchmarks/keyword_rankings.py OUT.txt [--data ../shared/benchmarks/spider-train] [--split train] \
        [--top-k 10]
    python benchmarks/keyword_rankings.py --compare BEFORE.txt AFTER.txt

A line of OUT.txt is a question's index, its ``db_id`` and its ranking: the tables :meth:`search` returns for
``top_k``, best first, each as ``name=score`` (``name+=score`` where foreign-key expansion added it). ``--compare``
counts the questions whose order of tables differs, and those whose scores (4 decimals, as a search gives them)
differ, and lists each with both rankings.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.retrieval.retriever import make_retriever
from text2sql_dspy.programs.source import open_source

SPIDER_TRAIN = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "spider-train"


def rankings(data: Path, split: str, top_k: int) -> list[str]:
    """One line a question: ``index<TAB>db_id<TAB>ranking``."""
    lines = []
    for index, example in enumerate(load_split(data, split)):
        catalog = open_source(example.db_path).catalog
        hits = make_retriever(catalog, "keyword").search(example.question, top_k)
        ranking = " ".join(f"{h.name}{'+' if h.via else ''}={h.score:.4f}" for h in hits)
        lines.append(f"{index}\t{example.db_id}\t{ranking}")
    return lines


def compare(before: list[str], after: list[str]) -> list[str]:
    """A summary line, then each question whose ranking differs (its order of tables, or only its scores)."""
    if len(before) != len(after):
        raise SystemExit(f"the files rank {len(before)} and {len(after)} questions: not the same split")
    order, scores, shown = 0, 0, []
    for old, new in zip(before, after, strict=True):
        if old == new:
            continue
        index, db_id, old_ranking = old.split("\t")
        new_ranking = new.split("\t")[2]
        names = [[entry.rsplit("=", 1)[0] for entry in r.split()] for r in (old_ranking, new_ranking)]
        what = "order" if names[0] != names[1] else "scores"
        order += what == "order"
        scores += what == "scores"
        shown += [f"{index} {db_id} ({what})", f"  before: {old_ranking}", f"  after:  {new_ranking}"]
    return [f"{len(before)} questions: {order} rankings differ in their order of tables, {scores} only in their "
            f"scores, {len(before) - order - scores} are the same", *shown]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="where to write the rankings")
    parser.add_argument("--data", type=Path, default=SPIDER_TRAIN, help="a Spider-format folder (default: %(default)s)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="compare two files this wrote, instead of ranking")
    args = parser.parse_args()
    if args.compare:
        before, after = (p.read_text(encoding="utf-8").splitlines() for p in args.compare)
        print("\n".join(compare(before, after)))
    elif args.out is None:
        parser.error("give OUT.txt, or --compare BEFORE AFTER")
    else:
        args.out.write_text("\n".join(rankings(args.data, args.split, args.top_k)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
