"""False positives of the SQL validator on gold queries.

Every gold query of a Spider-layout folder (``dev.json``, ``train.json``, ``test.json``) is correct by
definition, so every one the validator calls invalid is a false positive. The check runs twice:
statically (catalog only) and with the dry run against the database. Printed: counts of gold
queries checked, flagged invalid (with their errors), flagged dangerous, and with warnings
(by kind), plus the mean and p99 validation time.

Usage::

    python benchmarks/check_validator_on_gold.py [SPIDER_DIR] [--show N]

``SPIDER_DIR`` defaults to ``../shared/benchmarks/spider-public`` (relative to the repository
root). Exit status 1 if any gold query is flagged invalid.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.programs.catalog.catalog import introspect_sqlite  # noqa: E402
from text2sql_dspy.programs.db.database import SQLiteDatabase  # noqa: E402
from text2sql_dspy.programs.query.validator import SQLValidator  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spider", nargs="?", default=str(ROOT.parent / "shared" / "benchmarks" / "spider-public"))
    parser.add_argument("--show", type=int, default=20, help="false positives to print per mode")
    args = parser.parse_args(argv)
    spider = Path(args.spider)

    examples = []
    for split in ("dev.json", "train.json", "test.json"):
        path = spider / split
        if path.is_file():
            examples += [(split, e) for e in json.loads(path.read_text(encoding="utf-8"))]
    if not examples:
        print(f"no dev.json/train.json under {spider}", file=sys.stderr)
        return 2

    validators: dict[str, tuple[SQLValidator, SQLValidator]] = {}
    for _, example in examples:
        db_id = example["db_id"]
        if db_id not in validators:
            db_path = spider / "database" / db_id / f"{db_id}.sqlite"
            catalog = introspect_sqlite(db_path, db_id)
            validators[db_id] = (SQLValidator(catalog), SQLValidator(catalog, SQLiteDatabase(db_path)))

    status = 0
    for mode, index in (("static", 0), ("dry-run", 1)):
        flagged, dangerous, timings = [], 0, []
        warnings: Counter[str] = Counter()
        for split, example in examples:
            validator = validators[example["db_id"]][index]
            start = time.perf_counter()
            result = validator.validate(example["query"])
            timings.append(time.perf_counter() - start)
            if not result.valid:
                flagged.append((split, example, result))
                dangerous += result.dangerous
            for warning in result.warnings:
                warnings[_warning_kind(warning)] += 1
        timings.sort()
        print(
            f"[{mode}] gold queries: {len(examples)}  flagged invalid (false positives): {len(flagged)}  "
            f"dangerous: {dangerous}  mean {1000 * statistics.mean(timings):.2f} ms  "
            f"p99 {1000 * timings[int(0.99 * (len(timings) - 1))]:.2f} ms"
        )
        for kind, count in warnings.most_common():
            print(f"    warning x{count}: {kind}")
        for split, example, result in flagged[: args.show]:
            print(f"  FP {split} {example['db_id']}: {example['query']}")
            for error in result.errors:
                print(f"      {error}")
        if flagged:
            status = 1
    return status


def _warning_kind(warning: str) -> str:
    """The warning's wording without the names and values in it."""
    words = []
    for word in warning.split():
        if any(q in word for q in "'\"") or word[:1].isdigit():
            break
        words.append(word.rstrip(":,"))
        if word.endswith(":") or len(words) == 5:
            break
    return " ".join(words)


if __name__ == "__main__":
    raise SystemExit(main())
