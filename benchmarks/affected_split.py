#!/usr/bin/env python
"""The held-out questions a change can touch, as split files for ``benchmarks/evaluate_arm.sh``: those whose recorded
answer weighed a reading (or took a step) the change concerns. Where the change acts on such readings only and
decoding is greedy, every other question is answered as before, so the arms need run only these. A turn of SParC or
CoSQL brings its whole conversation. Writes OUT/SET/affected.json beside links to the set's databases (and
``tables.json``) and prints what it chose. Asks nothing of the model. Run from the repository root:

    python benchmarks/affected_split.py OUT SET=RECORDS [SET=RECORDS ...] RULE [--program v2]
    RULE: (--kind KIND | --text TEXT)..., --lint LINT or --points-back

A reading is affected when:
  --kind KIND       one of its recorded findings is of this kind (``shows key``, ``missing value``, ...; repeat for any
                    of several)
  --text TEXT       one of its recorded findings holds this text (its kind or words of its message, as ``misuse of
                    aggregate``, an error the database gave)
  --lint LINT       today's lint LINT (``benchmarks/lint_on_training.py``) fires on its SQL: a lint added after the
                    records were made
and with --points-back the record is affected when a stand-alone rewrite of its follow-up points back at the
conversation (``conversation.points_back``).

SET is one of spider-dev, bird-on, bird-off (the questions of Spider dev and bird-public dev), sparc (SParC dev over
spider-public's databases) and cosql (CoSQL train over spider-train's), read under --benchmarks (default
../shared/benchmarks). RECORDS: a ``text2sql evaluate --out`` folder (``records.jsonl``, or ``records.jsonl.gz`` as
committed) or a collector's ``.jsonl.gz`` file, whose answer is under ``answer``. For example:

    python benchmarks/affected_split.py OUT --kind "shows key" --kind "missing value" \\
        spider-dev=benchmarks/results/verifier-live-2026-12-05/after/spider-dev \\
        sparc=benchmarks/results/verifier-live-2026-12-05/after/sparc
    bash benchmarks/evaluate_arm.sh OUT before SNAPSHOT spider-dev     # each arm, each set
    python benchmarks/compare_runs.py OUT/out/before/spider-dev OUT/out/after/spider-dev
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Callable
from pathlib import Path

from lint_on_training import database_of, fires, lint_named  # a sibling in benchmarks/

from text2sql_dspy.optimize.evaluation import load_records
from text2sql_dspy.programs.conversation import points_back

SETS = {  # set: (its questions under --benchmarks, the folder of its databases), conversations or not
    "spider-dev": ("spider-public/dev.json", "spider-public", False),
    "bird-on": ("bird-public/dev.json", "bird-public", False),
    "bird-off": ("bird-public/dev.json", "bird-public", False),
    "sparc": ("sparc-public/dev.json", "spider-public", True),
    "cosql": ("cosql-train/train.json", "spider-train", True),
}

Affects = Callable[[dict, Path], bool]  # (a record, its set's databases folder) -> whether the change can touch it


def records(path: Path, program: str = "v2") -> list[dict]:
    """The records of ``program`` in an evaluate folder (in question order), or a collector's file's (in file order)."""
    if path.is_dir():
        found = sorted(load_records(path / "records.jsonl").items(), key=lambda kv: kv[0][1])
        return [record for (name, _), record in found if name == program]
    return [json.loads(line) for line in gzip.open(path, "rt") if line.strip()]


def answer(record: dict) -> dict:
    """The recorded answer: a collector's record holds it under ``answer``, an evaluate record is one."""
    return record.get("answer") or record


def by_findings(kinds: set[str], texts: list[str]) -> Affects:
    """A record with a reading carrying a finding of one of ``kinds`` or holding one of ``texts``."""
    def affects(record: dict, databases: Path) -> bool:
        findings = [f for r in answer(record).get("readings") or [] for f in r.get("findings") or []]
        return any(isinstance(f, dict) and f.get("kind") in kinds for f in findings) or any(
            text in json.dumps(f) for f in findings for text in texts)
    return affects


def by_lint(name: str) -> Affects:
    """A record with a reading today's lint ``name`` fires on."""
    lint = lint_named(name)

    def affects(record: dict, databases: Path) -> bool:
        database = database_of(databases, record["db_id"])
        return any(fires(lint, r["sql"], database) for r in answer(record).get("readings") or [])
    return affects


def pointing_back(record: dict, databases: Path) -> bool:
    """A record whose follow-up's stand-alone rewrite points back at the conversation."""
    return any(s["kind"] == "rewrite" and points_back(s["note"]) for s in answer(record).get("steps") or [])


def write(out: Path, name: str, found: list[dict], benchmarks: Path) -> str:
    """OUT/SET/affected.json (the questions, or conversations, of the records ``found``) beside links to the set's
    databases; the line that says what it holds."""
    questions, databases, conversations = SETS[name]
    items = json.loads((benchmarks / questions).read_text())
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    for link in ("database", "tables.json"):
        if (benchmarks / databases / link).exists() and not (folder / link).exists():
            (folder / link).symlink_to(benchmarks / databases / link)
    if conversations:
        touched = sorted({r["interaction"] for r in found})
        chosen = [items[i] for i in touched]
        said = f"{len(found)} turns in {len(touched)} conversations of {sum(len(c['interaction']) for c in chosen)} " \
               f"turns {touched}"
    else:
        chosen = [items[r["index"]] for r in found]
        assert all(q["question"] == r["question"] for q, r in zip(chosen, found)), f"{name}: not its questions"
        said = f"{len(found)} questions {[r['index'] for r in found]}"
    (folder / "affected.json").write_text(json.dumps(chosen, indent=1))
    return f"{name}: {said}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("sets", nargs="+", metavar="SET=RECORDS")
    parser.add_argument("--kind", action="append", default=[], help="a recorded finding's kind")
    parser.add_argument("--text", action="append", default=[], help="text a recorded finding holds")
    parser.add_argument("--lint", help="a lint of today's validator, run again on each reading")
    parser.add_argument("--points-back", action="store_true", help="a follow-up's rewrite that points back")
    parser.add_argument("--program", default="v2", help="the program whose records an evaluate folder is read for")
    parser.add_argument("--benchmarks", type=Path, default=Path("../shared/benchmarks"))
    args = parser.parse_args(argv)
    chosen = [bool(args.kind or args.text), bool(args.lint), args.points_back]
    if sum(chosen) != 1:
        parser.error("give one rule: --kind/--text, --lint or --points-back")
    affects = (by_findings(set(args.kind), args.text) if chosen[0] else by_lint(args.lint) if chosen[1]
               else pointing_back)
    benchmarks = args.benchmarks.resolve()
    for pair in args.sets:
        name, _, path = pair.partition("=")
        if name not in SETS or not path:
            parser.error(f"{pair}: expected SET=RECORDS, SET one of {', '.join(SETS)}")
        databases = benchmarks / SETS[name][1]
        found = [r for r in records(Path(path), args.program) if affects(r, databases)]
        print(write(args.out, name, found, benchmarks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
