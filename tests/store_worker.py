"""A child process for the store's concurrency and crash tests: adds pairs to a store, reporting each commit.

    python -m tests.store_worker STORE DB PREFIX COUNT [GO_FILE]

Prints ``ready`` once the store and database are open, waits for GO_FILE to exist (if given), then adds
COUNT distinct pairs, printing ``committed <id> <question>`` after each add returns.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.source import open_source


def pair(prefix: str, i: int) -> tuple[str, str]:
    question = f"{prefix} {i}: how many login attempts have an id above {i}?"
    return question, f"SELECT count(*) FROM login_attempts WHERE id > {i}"


def main(store_path: str, db_path: str, prefix: str, count: str, go_file: str | None = None) -> None:
    store, source = ExampleStore(store_path), open_source(db_path)
    print("ready", flush=True)
    while go_file is not None and not Path(go_file).exists():
        time.sleep(0.01)
    for i in range(int(count)):
        question, sql = pair(prefix, i)
        example = store.add_pair(source, question, sql)
        print(f"committed {example.id} {question}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
