#!/usr/bin/env python
"""What a first answer costs on a database whose prompt prefix no process has read: V2 asked cold, against V2 asked
after ``warm()`` (what ``serve`` and ``chat`` do at start-up, while nobody waits). Not a test.

    TEXT2SQL_N_THREADS=1 python benchmarks/bench_first_answer.py --mode cold
    TEXT2SQL_N_THREADS=1 python benchmarks/bench_first_answer.py --mode warmed
    TEXT2SQL_N_THREADS=1 python benchmarks/bench_first_answer.py --mode cold --cold-budget 2500    # as ``ask``

Each mode runs in its own process with the disk tier of the KV prefix cache off (``TEXT2SQL_KV_CACHE_BYTES=0``, set
here), so nothing an earlier process read helps; the bundled database's value index, kept in the user cache, is built
first and not timed. ``--schema-budget`` shows the linked tables of a schema over that many tokens (the whole schema is
about 8,300); ``--cold-budget``, as ``ask`` does, only while no cache holds it. Prints the seconds of the warm-up
(warmed mode), of the first question and of the second, for the first two questions of the bundled ``data/test.json``
(``--start I``: from its I-th; ``--questions N``: N of them, the first timed as the first answer, each later one as the
next). ``--top-k`` sets the program's tables shown where the schema is not shown whole. ``--follow-up TEXT`` then asks
TEXT after the first question, in its conversation, and times it; ``--warm draft`` warms the first question's draft
alone (as before the follow-up's edit was warmed too), for the comparison. Run both modes in one sitting and compare
ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"  # before the engine is built

from text2sql_dspy.optimize.calibrate_command import same_rows  # noqa: E402
from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.bundled import ensure_bundled_database  # noqa: E402
from text2sql_dspy.programs.catalog.values import value_index  # noqa: E402
from text2sql_dspy.programs.source import open_source  # noqa: E402

TEST = Path(__file__).resolve().parents[1] / "data" / "test.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["cold", "warmed"], required=True)
    parser.add_argument("--program", default="v2")
    parser.add_argument("--schema-budget", type=int, help="the program's schema_budget (default: its own)")
    parser.add_argument("--cold-budget", type=int, help="the program's cold_budget (default: none)")
    parser.add_argument("--top-k", type=int, help="the program's top_k (default: its own)")
    parser.add_argument("--start", type=int, default=0, help="the first question's index in data/test.json")
    parser.add_argument("--questions", type=int, default=2, help="how many questions, in order")
    parser.add_argument("--follow-up", help="a follow-up to the first question, asked last in its conversation")
    parser.add_argument("--warm", choices=["all", "draft"], default="all",
                        help="what the warmed mode reads ahead: every prefix the program warms, or the draft's alone")
    args = parser.parse_args(argv)
    db = str(ensure_bundled_database())
    source = open_source(db)
    value_index(source)  # built (or read) before anything is timed
    tests = json.loads(TEST.read_text(encoding="utf-8"))[args.start: args.start + args.questions]
    budget = {k: v for k, v in (("schema_budget", args.schema_budget), ("cold_budget", args.cold_budget),
                                ("top_k", args.top_k)) if v}
    program = make_program(args.program, db_path=db, **budget)
    figures: dict[str, float | bool] = {}
    if args.warm == "draft":
        program.warmed = lambda: type(program).warmed(program)[:1]  # the draft's prefix alone
    if args.mode == "warmed":
        start = time.perf_counter()
        figures["warmed"] = program.warm(db)
        figures["warm-up s"] = time.perf_counter() - start
    seconds, right = [], []
    chat = program.conversation(db)
    for i, test in enumerate(tests):
        start = time.perf_counter()
        answer = chat.ask(test["question"]) if i == 0 else program.run(test["question"], db)
        seconds.append(time.perf_counter() - start)
        right.append(answer.sql != "" and same_rows(source.database, answer.sql, test["query"]))
    figures["first answer s"] = seconds[0]
    if len(seconds) > 1:
        figures["second answer s"] = seconds[1]
    if args.follow_up:
        stats = program.lm.engine.stats
        read_before = stats.prompt_tokens - stats.cached_prompt_tokens
        start = time.perf_counter()
        followed = chat.ask(args.follow_up)
        figures["follow-up s"] = time.perf_counter() - start
        figures["follow-up calls"] = followed.metrics.lm_calls
        figures["follow-up steps"] = " ".join(step.kind for step in followed.steps)
        figures["follow-up prompt tokens read"] = stats.prompt_tokens - stats.cached_prompt_tokens - read_before
    print(json.dumps({"mode": args.mode, "warm": args.warm, "program": args.program,
                      "schema_budget": args.schema_budget,
                      "cold_budget": args.cold_budget, "top_k": args.top_k, "start": args.start,
                      **{k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()},
                      "answer s": [round(s, 1) for s in seconds], "right": right}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
