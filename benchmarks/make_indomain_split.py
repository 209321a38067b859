"""An in-domain split of a Spider-format split: per database, half of the distinct gold queries go to a store.

Spider asks most gold queries twice, in two wordings. Questions are grouped by their gold query
(compared as sqlglot writes it, so spacing and case do not split a group); per database, a seeded
half of the groups becomes ``train.json`` (the pairs an example store learns) and the other half
``test.json``. A wording and its paraphrase are therefore always on the same side. ``test.json``
takes the databases in turn, so ``evaluate --limit N`` covers all of them.

    python benchmarks/make_indomain_split.py ../shared/benchmarks/spider-public runs/spider-indomain
    text2sql compile --program v2 --optimizer none --dev-limit 0 --data runs/spider-indomain \
        --out runs/spider-indomain/v2.json
    text2sql evaluate --data runs/spider-indomain --split test --program v2 --program runs/spider-indomain/v2.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from itertools import zip_longest
from pathlib import Path

import sqlglot
from sqlglot.errors import SqlglotError


def gold_key(sql: str) -> str:
    """One spelling per query: sqlglot's rendering, else the query with its spacing and case folded."""
    try:
        return sqlglot.parse_one(sql, read="sqlite").sql(dialect="sqlite").lower()
    except SqlglotError:
        return " ".join(sql.split()).lower()


def split(examples: list[dict], seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, test): per database, a seeded half of the gold-query groups (rounded down) to train."""
    groups: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for example in examples:
        groups[example["db_id"]][gold_key(example["query"])].append(example)
    rng = random.Random(seed)
    train, tests = [], []
    for db_id in sorted(groups):
        keys = sorted(groups[db_id])
        rng.shuffle(keys)
        half = len(keys) // 2
        train += [e for key in keys[:half] for e in groups[db_id][key]]
        tests.append([e for key in keys[half:] for e in groups[db_id][key]])
    test = [e for row in zip_longest(*tests) for e in row if e is not None]  # the databases in turn
    return train, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="a Spider-format folder (dev.json, tables.json, database/)")
    parser.add_argument("out", type=Path, help="the folder to write (train.json, test.json; links to the rest)")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train, test = split(json.loads((args.data / f"{args.split}.json").read_text()), args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("database", "tables.json"):
        link = args.out / name
        if not link.exists():
            link.symlink_to((args.data / name).resolve())
    (args.out / "train.json").write_text(json.dumps(train, indent=1))
    (args.out / "test.json").write_text(json.dumps(test, indent=1))
    overlap = {(e["db_id"], gold_key(e["query"])) for e in train} & {(e["db_id"], gold_key(e["query"])) for e in test}
    print(f"train {len(train)} questions, test {len(test)} questions, gold queries on both sides: {len(overlap)}")


if __name__ == "__main__":
    main()
