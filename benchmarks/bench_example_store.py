"""Gold pairs through the example store's checks: how many go in, which are refused and why, and how fast.

Every gold query of a Spider-format split is correct by definition, so each one the store refuses is
either a false refusal of the checks or a gold query the database cannot run. Printed per split: the
import's counts, per database, every refusal with its reason, and the seconds per pair (checks and write).

Usage::

    python benchmarks/bench_example_store.py [DATA_DIR] [--split train --split dev]

``DATA_DIR`` defaults to the bundled data/. Each run writes a fresh store in a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.programs.bundled import BUNDLED_DATA  # noqa: E402
from text2sql_dspy.programs.examples.store import ExampleStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(BUNDLED_DATA))
    parser.add_argument("--split", action="append", help="split(s) to import (default: train)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = ExampleStore(Path(folder) / "examples.sqlite")
        for split in args.split or ["train"]:
            start = time.perf_counter()
            report = store.import_split(args.data, split, progress=False)
            seconds = time.perf_counter() - start
            print(f"{split}: {report.total} pairs over {len(report.keys)} database(s): {report.summary()}; "
                  f"{1000 * seconds / max(report.total, 1):.1f} ms per pair")
            for db_id, key in report.keys.items():
                print(f"  {db_id}: {store.count(key)} stored (key {key})")
            for question, sql, reason in report.refused:
                print(f"  refused: {question}\n    {sql}\n    {reason}")
            kinds = Counter(reason.split(":")[0] for *_, reason in report.refused)
            for kind, n in kinds.most_common():
                print(f"  {n} x {kind}")


if __name__ == "__main__":
    main()
