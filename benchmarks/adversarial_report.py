"""The adversarial suite's figures: the hostile SQL corpus through validator, executor and the agent's tools.

For each database (the tiny test database and the bundled ``saas`` one, both copied to a temporary
folder first) it prints, per category: cases tried, refused by the validator as dangerous, failed
harmlessly (not refused, yet no crash, hang or change), refused by the executor when run directly,
mutations and hangs (both must be 0), crashes, cases handled otherwise than they must be, and the
slowest case; then the database file's sha256 before and after. No language model is involved.

Usage::

    python benchmarks/adversarial_report.py

Exit status 1 if anything changed, hung, crashed or was handled otherwise than it must be.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.programs.dataset import ensure_bundled_database  # noqa: E402
from tests.adversarial_corpus import CASE_BOUND_S, Outcome, make_arena, problems, run_corpus  # noqa: E402
from tests.tiny_db import build_tiny_db  # noqa: E402

COLUMNS = ["category", "cases", "refused", "failed harmlessly", "exec refused", "mutations", "hangs", "crashes", "wrong",
           "slowest s"]  # fmt: skip


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
    line = lambda row: "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |"  # noqa: E731
    return "\n".join([line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, table)])


def main() -> int:
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sources = {"tiny": build_tiny_db(folder), "saas": ensure_bundled_database()}
        for name, source_db in sources.items():
            arena = make_arena(source_db, folder / f"arena_{name}")
            outcomes, before, after = run_corpus(arena.harness, arena.cases)
            table = rows(outcomes)
            print(f"\n## {name}: {source_db.name}, {len(arena.cases)} cases (a hang: over {CASE_BOUND_S:g}s a case)\n")
            print(render(table))
            print(f"\nsha256 before {before}\nsha256 after  {after}  {'(same)' if before == after else '(CHANGED)'}")
            leftovers = sorted(p.name for p in arena.harness.scratch.iterdir())
            print(f"files written to the scratch folder: {len(leftovers)}")
            for outcome in outcomes:
                for problem in problems(outcome):
                    print(f"  ! {outcome.case.label}: {problem}")
            ok = ok and before == after and not leftovers and table[-1][-2] == "0"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
