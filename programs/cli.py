"""The ``text2sql`` command.

``text2sql ask "question" [--db PATH|URL] [--program baseline|v1|v2|PATH.json] [--model M] [--judge-model M]
[--trace] [--execute]`` prints the SQL, its confidence and the judge's score. A user's mistake
(empty question, missing database, bad model string, missing API key) exits 2 with one line
that names the fix, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from text2sql_dspy.programs.errors import Text2SQLError

EXIT_USER_ERROR = 2


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1 (rows, top-k, limits, threads)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="text2sql", description="Turn a question into safe, validated SQL.")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer one question")
    ask.add_argument("question")
    ask.add_argument(
        "--db",
        help="database: a SQLite file, sqlite:///PATH, postgresql://USER@HOST/DBNAME or duckdb:///PATH.duckdb "
        "(default: the bundled demo database)",
    )
    ask.add_argument("--schema", help="folder of per-table schema files (default: schemas/<db_id> if it exists)")
    ask.add_argument("--program", default="v2", help="baseline, v1, v2, or a compiled .json (default: v2)")
    ask.add_argument("--model", help="agent LM: 'local' (default) or any LiteLLM string, e.g. anthropic/claude-sonnet-4-5")
    ask.add_argument("--judge-model", help="judge LM for v2 (default: the agent's model)")
    ask.add_argument("--retrieval", choices=["semantic", "keyword"], default="semantic")
    ask.add_argument("--top-k", type=positive_int, default=5)
    ask.add_argument("--trace", action="store_true", help="show the agent's reasoning steps")
    ask.add_argument("--execute", action="store_true", help="run the query read-only and show the first rows")
    ask.add_argument("--rows", type=positive_int, default=10, help="rows to show with --execute")
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(ask, build_parser().parse_args(argv))


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; a user's mistake prints one ``error:`` line and exits 2, Ctrl-C exits 130."""
    try:
        return command(args)
    except Text2SQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def ask(args: argparse.Namespace) -> int:
    from text2sql_dspy.programs.agents.base import check_question
    from text2sql_dspy.programs.dataset import ensure_bundled_database
    from text2sql_dspy.programs.agents.registry import make_program

    question = check_question(args.question)
    db_path = args.db or str(ensure_bundled_database())
    program = make_program(
        args.program,
        db_path=db_path,
        schema_path=args.schema,
        retrieval_type=args.retrieval,
        top_k=args.top_k,
        model_id=args.model,
        judge_model_id=args.judge_model,
    )
    result = program.run(question)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(result["query"] or "-- no query produced")
    judge = result.get("judge_score")
    line = f"\nconfidence {result['confidence']:.2f}"
    if judge is not None:
        line += f" | judge score {judge:.2f}"
    line += f" | {result['lm_calls']} LM calls | {result['latency_s']:.1f}s"
    if result.get("total_cost"):
        line += f" | ${result['total_cost']:.4f}"
    print(line)
    if result.get("fallback_reason"):
        print(f"note: {result['fallback_reason']}")
    if args.trace:
        for i, step in enumerate(result.get("reasoning_steps", []), 1):
            print(f"\n[{i}] {step.get('thought', '')}\n    -> {step.get('tool', '')}({json.dumps(step.get('args'), default=str)})")
            for obs_line in str(step.get("observation", "")).splitlines():
                print(f"    | {obs_line}")
    database = program.source(db_path).database
    if args.execute and result["query"] and database is not None:
        print_rows(database.execute(result["query"], max_rows=args.rows))
    return 0


def print_rows(outcome) -> None:  # noqa: ANN001 - QueryResult, imported lazily
    if not outcome.ok:
        print(f"\nexecution failed: {outcome.error}")
        return
    print("\n" + " | ".join(outcome.columns))
    for row in outcome.rows:
        print(" | ".join("NULL" if v is None else str(v) for v in row))
    if outcome.truncated:
        print(f"... (first {len(outcome.rows)} rows)")


if __name__ == "__main__":
    sys.exit(main())
