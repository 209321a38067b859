"""How often issue 81's mechanical repairs (:mod:`~text2sql_dspy.programs.query.repairs`) fire on collected training
answers, and how often what they make validates and is right.

    .venv/bin/python benchmarks/repair_firings.py FILE.jsonl.gz [...] --data-root ../shared/benchmarks/spider-train

Each collected answer (the collector's JSONL, gzipped or not: ``db_id``, ``question``, ``gold``, ``scoring``,
``answer`` with its ``readings``; a question found in two files counts once) is read reading by reading. A reading
stored as refused is made runnable and checked again as today's program would (``DataSource.runnable``, then the
validator, with the question and, for a conversation's turn, the query the turn before answered); each that still
fails gets :func:`~text2sql_dspy.programs.query.repairs.repairs`, and each repaired reading is validated and, where
valid, run and compared with the gold query (``compare_execution``, by the record's scoring). Readings stored as valid
are taken as valid. It prints, per repair kind, the refused readings it fired on, the repaired readings it made, those
that validate and those that are right; and, for the answers whose every reading is refused, how many a repair made
answerable (a repaired reading validates) and right; and, for the answers with a valid reading of which none is
right (``readings_correct``, where the file keeps it), how many a repaired reading of a refused one would make right.
It runs queries only, no model.

Training data only: a path that names a held-out set (``spider-public``, ``sparc-public``, ``bird-public``, a dev or
test set) is refused.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.query.repairs import KINDS, repairs
from text2sql_dspy.programs.query.results import Scoring
from text2sql_dspy.programs.source import open_source

HELD_OUT = ("spider-public", "sparc-public", "bird-public", "cosql-dev", "spider-dev", "sparc-dev", "bird-dev",
            "spider-test")


def refuse_held_out(paths: Sequence[Path]) -> None:
    for path in paths:
        named = [name for name in HELD_OUT if name in str(path).lower()]
        if named:
            raise SystemExit(f"{path} names a held-out set ({named[0]}): run this on training data only")


def records(files: Sequence[Path]) -> Iterator[tuple[dict, str]]:
    """Each collected question once (by database, index, question and turn), with the query its turn before answered
    ("" for none)."""
    seen: set[tuple] = set()
    for file in files:
        with (gzip.open(file, "rt", encoding="utf-8") if file.suffix == ".gz" else file.open(encoding="utf-8")) as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        answered = {(r["db_id"], r.get("interaction"), r.get("turn")): r["answer"].get("sql") or "" for r in lines}
        for record in lines:
            key = (record["db_id"], record.get("index"), record.get("question"), record.get("turn"))
            if key in seen:
                continue
            seen.add(key)
            turn = record.get("turn")
            yield record, answered.get((record["db_id"], record.get("interaction"), turn - 1), "") if turn else ""


def database_of(db_id: str, roots: Sequence[Path]) -> Path:
    for root in roots:
        for path in (root / "database" / db_id / f"{db_id}.sqlite", root / db_id / f"{db_id}.sqlite"):
            if path.is_file():
                return path
    raise FileNotFoundError(f"no database {db_id} under {', '.join(map(str, roots))}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="collected answers (JSONL, .gz or not)")
    parser.add_argument("--data-root", type=Path, action="append", required=True,
                        help="a folder holding database/<db_id>/<db_id>.sqlite (repeat for more)")
    parser.add_argument("--cap", type=int, default=3, help="repaired readings per refused reading (default 3)")
    parser.add_argument("--show", type=int, default=0, help="print this many right repairs of each kind")
    args = parser.parse_args(argv)
    refuse_held_out([*args.files, *args.data_root])

    fired, made, valid, right = Counter(), Counter(), Counter(), Counter()
    questions = refused = rechecked_valid = 0
    all_refused = Counter()  # answers whose every reading is refused: in all, repaired, answerable, right
    none_right = Counter()  # answers with a valid reading, none right (as stored): in all, a repaired reading right
    shown: Counter = Counter()
    for record, previous in records(args.files):
        questions += 1
        readings = record["answer"].get("readings") or []
        db = database_of(record["db_id"], args.data_root)
        source = open_source(db)
        scoring = Scoring(record.get("scoring") or "spider")
        answerable = correct = repaired = False
        refused_here = 0
        for reading in readings:
            if reading.get("valid"):
                continue
            check = source.validator.validate(source.runnable(reading["sql"]), question=record["question"],
                                              previous=previous)
            if check.valid:
                rechecked_valid += 1
                continue
            refused += 1
            refused_here += 1
            found = repairs(check.sql, check.findings, source.catalog, source.dialect, cap=args.cap)
            repaired = repaired or bool(found)
            for kind in {r.kind for r in found}:
                fired[kind] += 1
            for repair in found:
                made[repair.kind] += 1
                if not source.validator.validate(repair.sql, question=record["question"], previous=previous).valid:
                    continue
                valid[repair.kind] += 1
                answerable = True
                if compare_execution(repair.sql, record["gold"], str(db), scoring).match:
                    right[repair.kind] += 1
                    correct = True
                    if shown[repair.kind] < args.show:
                        shown[repair.kind] += 1
                        print(f"[{repair.kind}] {record['db_id']}: {record['question']}\n  was:  {check.sql}\n"
                              f"  now:  {repair.sql}\n  ({'; '.join(repair.changes)})\n")
        if readings and refused_here == len(readings):
            all_refused.update(["in all"] + ["repaired"] * repaired + ["answerable"] * answerable
                               + ["right"] * correct)
        stored = record.get("readings_correct") or []
        valid_stored = [right for reading, right in zip(readings, stored) if reading.get("valid")]
        if len(stored) == len(readings) and valid_stored and not any(valid_stored):
            none_right.update(["in all"] + ["right"] * correct)

    print(f"{questions} questions; {refused} readings refused by today's validator "
          f"({rechecked_valid} stored as refused now validate as today's program runs them)\n")
    print(f"{'repair':<16} {'fired on':>9} {'readings':>9} {'validate':>9} {'right':>6}")
    for kind in KINDS:
        print(f"{kind:<16} {fired[kind]:>9} {made[kind]:>9} {valid[kind]:>9} {right[kind]:>6}")
    print(f"{'all':<16} {'':>9} {sum(made.values()):>9} {sum(valid.values()):>9} {sum(right.values()):>6}\n")
    print(f"answers whose every reading is refused: {all_refused['in all']}; a repair fired on "
          f"{all_refused['repaired']}, made {all_refused['answerable']} answerable and {all_refused['right']} right")
    print(f"answers with a valid reading, none right (as stored, where the file keeps each reading's correctness): "
          f"{none_right['in all']}; a repaired reading of a refused one is right on {none_right['right']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
