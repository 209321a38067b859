#!/usr/bin/env python
"""One evaluation run in parts on separate cores (or machines), joined back into one run folder. Asks nothing of the
model.

    python benchmarks/split_parts.py tail DATA SPLIT FROM DEST
        DEST/SPLIT.json: the split's items (conversations in SParC's format, else questions) from item FROM on.
        Answer it as its own run (`text2sql evaluate --data DEST --split SPLIT ...`, `--databases` for SParC) while
        the first part runs over the original split with `--limit` = the turns (questions) before FROM.
    python benchmarks/split_parts.py join DATA SPLIT DEST RUN@FROM ...
        DEST/records.jsonl: each RUN's records, renumbered as the original split's (RUN@0 for the first part), and the
        first part's run.json. `text2sql evaluate` with the original command and `--out DEST` then writes the report
        of the whole run and answers nothing it already has. A record whose question is not the original's at its
        new place is refused.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from text2sql_dspy.optimize.evaluation import load_records


def items(data: Path, split: str) -> list[dict]:
    """The split file's items: SParC's conversations, or Spider's and BIRD's questions."""
    return json.loads((data / f"{split}.json").read_text(encoding="utf-8"))


def questions(item: dict) -> list[str]:
    """An item's questions in order: each turn's utterance in a conversation, else the one question."""
    if "interaction" in item:
        return [step["utterance"] for step in item["interaction"]]
    return [item["question"]]


def questions_before(found: list[dict], first: int) -> int:
    """How many questions (turns) the items before item ``first`` hold: the first question's index in the split."""
    return sum(len(questions(item)) for item in found[:first])


def tail(data: Path, split: str, first: int, dest: Path) -> int:
    """Write the split's items from ``first`` on as DEST/SPLIT.json; how many questions come before them."""
    found = items(data, split)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / f"{split}.json").write_text(json.dumps(found[first:]), encoding="utf-8")
    return questions_before(found, first)


def renumbered(record: dict, offset: int, first: int) -> dict:
    """``record`` placed in the original split: its index moved by ``offset`` questions, its conversation (if any)
    by ``first`` items."""
    moved = {**record, "index": record["index"] + offset}
    if "interaction" in record:
        moved["interaction"] = record["interaction"] + first
    return moved


def join(data: Path, split: str, dest: Path, parts: list[tuple[Path, int]]) -> int:
    """Write the parts' records into DEST, renumbered; how many. Refuses a record whose question is not the
    original's at its new index, and two parts that answer one question."""
    found = items(data, split)
    original = [q for item in found for q in questions(item)]
    joined: dict[tuple[str, int], dict] = {}
    for run, first in parts:
        offset = questions_before(found, first)
        for record in load_records(run / "records.jsonl").values():
            moved = renumbered(record, offset, first)
            key = (moved["program"], moved["index"])
            if moved["index"] >= len(original) or original[moved["index"]] != moved["question"]:
                raise SystemExit(f"{run}: record {record['index']} ({record['question']!r}) is not question "
                                 f"{moved['index']} of {data / split}.json: is {first} the part's first item?")
            if key in joined:
                raise SystemExit(f"{run}: question {moved['index']} is answered by two parts")
            joined[key] = moved
    dest.mkdir(parents=True, exist_ok=True)
    rows = sorted(joined.values(), key=lambda r: (r["program"], r["index"]))
    (dest / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    shutil.copy(parts[0][0] / "run.json", dest / "run.json")
    return len(rows)


def part(text: str) -> tuple[Path, int]:
    run, _, first = text.rpartition("@")
    if not run or not first.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected RUN@FIRST, e.g. runs/tail@172")
    return Path(run), int(first)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cut = commands.add_parser("tail", help="write the split from one item on")
    glue = commands.add_parser("join", help="join the parts' records into one run folder")
    for command in (cut, glue):
        command.add_argument("data", type=Path, help="the original data folder")
        command.add_argument("split")
    cut.add_argument("first", type=int, help="the first item (conversation or question) of the tail")
    cut.add_argument("dest", type=Path)
    glue.add_argument("dest", type=Path)
    glue.add_argument("parts", nargs="+", type=part, metavar="RUN@FIRST")
    args = parser.parse_args(argv)
    if args.command == "tail":
        before = tail(args.data, args.split, args.first, args.dest)
        print(f"{args.dest / (args.split + '.json')}: from item {args.first}; the first part: --limit {before}")
    else:
        print(f"{args.dest / 'records.jsonl'}: {join(args.data, args.split, args.dest, args.parts)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
