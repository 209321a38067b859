"""The adversarial suite's figures: the hostile SQL corpus through validator, executor and the agent's tools.

For each database (the tiny test database and the bundled ``saas`` one on SQLite, both copied to a temporary folder
first; ``saas`` loaded into a throwaway PostgreSQL server and a throwaway MariaDB server, queried through a SELECT-only
role, and into a DuckDB file) it prints, per category: cases tried, refused by the validator as dangerous, failed
harmlessly (not refused, yet no crash, hang or change), refused by the executor when run directly, mutations and hangs
(both must be 0), crashes, cases handled otherwise than they must be, and the slowest case; then the checksum before and
after (SQLite: the file's sha256; PostgreSQL and DuckDB: every table's contents and the catalog). No language model is
involved.

Usage::

    python benchmarks/adversarial_report.py [--engine sqlite|postgres|duckdb|mariadb ...]

PostgreSQL and MariaDB need the server binaries (``apt-get install -y postgresql mariadb-server``); without
them they are skipped, saying why.

Exit status 1 if anything changed, hung, crashed or was handled otherwise than it must be.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import mariadb_server  # noqa: E402
from tests.adversarial_corpus import (  # noqa: E402
    CASE_BOUND_S,
    Arena,
    Outcome,
    make_arena,
    make_duckdb_arena,
    make_mariadb_arena,
    make_postgres_arena,
    problems,
    run_corpus,
)
from tests.postgres_server import ServerUnavailable, start  # noqa: E402
from tests.tiny_db import build_tiny_db  # noqa: E402
from text2sql_dspy.programs.bundled import ensure_bundled_database  # noqa: E402

COLUMNS = ["category", "cases", "refused", "failed harmlessly", "exec refused", "mutations", "hangs", "crashes",
           "wrong", "slowest s"]  # fmt: skip


def rows(outcomes: list[Outcome]) -> list[list[str]]:
    """One row per category, then the total."""
    by_category: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_category[outcome.case.category].append(outcome)
    table = [_row(name, group) for name, group in by_category.items()]
    return [*table, _row("total", outcomes)]


def _row(name: str, group: list[Outcome]) -> list[str]:
    counts = [
        len(group),
        sum(o.refused for o in group),
        sum(o.failed_harmlessly for o in group),
        sum(o.executor_error is not None for o in group),
        sum(o.mutated for o in group),
        sum(o.hung for o in group),
        sum(o.crash is not None for o in group),
        sum(bool(problems(o)) for o in group),
    ]
    return [name, *map(str, counts), f"{max(o.elapsed_s for o in group):.2f}"]


def render(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [COLUMNS, *table]) for i in range(len(COLUMNS))]

    def line(row: list[str]) -> str:
        cells = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return "| " + " | ".join(cells) + " |"

    return "\n".join([line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, table)])


ENGINES = ("sqlite", "postgres", "duckdb", "mariadb")


def arenas(engine: str, folder: Path) -> dict[str, Arena]:
    """name -> arena for one engine (PostgreSQL: on a throwaway server, stopped by :func:`main`)."""
    saas = ensure_bundled_database()
    if engine == "sqlite":
        return {
            "sqlite tiny": make_arena(build_tiny_db(folder), folder / "arena_tiny"),
            "sqlite saas": make_arena(saas, folder / "arena_saas"),
        }
    if engine == "duckdb":
        return {"duckdb saas": make_duckdb_arena(saas, folder / "arena_duckdb")}
    if engine == "mariadb":
        return {"mariadb saas": make_mariadb_arena(SERVER[0], saas, "arena")}
    return {"postgres saas": make_postgres_arena(SERVER[0], saas, "arena", folder / "arena_postgres")}


SERVER: list = []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", choices=ENGINES, help="engines to run (default: all)")
    engines = parser.parse_args(argv).engine or list(ENGINES)
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    ok = True
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for engine in engines:
            if engine in ("postgres", "mariadb"):
                try:
                    SERVER.append(start() if engine == "postgres" else mariadb_server.start())
                except (ServerUnavailable, mariadb_server.ServerUnavailable) as exc:
                    print(f"\n## {engine}: skipped ({exc})")
                    continue
            try:
                for name, arena in arenas(engine, folder).items():
                    outcomes, before, after = run_corpus(arena.harness, arena.cases)
                    table = rows(outcomes)
                    print(f"\n## {name}: {len(arena.cases)} cases (a hang: over {CASE_BOUND_S:g}s a case)\n")
                    print(render(table))
                    print(f"\nchecksum before {before}\nchecksum after  {after}  "
                          f"{'(same)' if before == after else '(CHANGED)'}")
                    leftovers = sorted(p.name for p in arena.harness.scratch.iterdir())
                    print(f"files written to the scratch folder: {len(leftovers)}")
                    for outcome in outcomes:
                        for problem in problems(outcome):
                            print(f"  ! {outcome.case.label}: {problem}")
                    total = table[-1]
                    summary.append([name, total[1], total[2], total[3], total[5], total[6], total[8],
                                    "same" if before == after else "CHANGED"])  # fmt: skip
                    ok = ok and before == after and not leftovers and total[-2] == "0"
            finally:
                if engine in ("postgres", "mariadb") and SERVER:
                    SERVER.pop().stop()
    print("\n## per engine\n")
    header = ["engine / database", "cases", "refused", "failed harmlessly", "mutations", "hangs", "wrong", "checksum"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in summary:
        print("| " + " | ".join(row) + " |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
