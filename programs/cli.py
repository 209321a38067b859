"""The ``text2sql`` command: ``ask``, ``compile`` and ``evaluate``.

``text2sql ask "question" [--db PATH|URL] [--program baseline|v1|v2|PATH.json] [--model M] [--judge-model M]
[--trace] [--execute]`` prints the SQL, its confidence and the judge's score. ``text2sql compile``
(also ``python -m optimize``) and ``text2sql evaluate`` (also ``python evaluate.py``) live in
:mod:`text2sql_dspy.optimize`. A user's mistake (empty question, missing database, bad model
string, missing API key) exits 2 with one line that names the fix, never a traceback; a served or hosted
model that cannot answer (down, too slow, garbled) exits 3 the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from text2sql_dspy.programs.errors import Text2SQLError

EXIT_USER_ERROR = 2
EXIT_MODEL_SERVICE_ERROR = 3


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1 (rows, top-k, limits, threads)."""
    return _whole_number(text, minimum=1)


def non_negative_int(text: str) -> int:
    """argparse type for counts where 0 means "none" (e.g. dev questions scored around a compile)."""
    return _whole_number(text, minimum=0)


def _whole_number(text: str, *, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class Command:
    """A ``text2sql`` subcommand; :meth:`main` also runs it as a script of its own."""

    name: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]

    def main(self, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
        parser = argparse.ArgumentParser(prog=prog, description=self.description)
        self.add_arguments(parser)
        return run_command(self.run, parser.parse_args(argv))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="text2sql", description="Turn a question into safe, validated SQL.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands():
        command_parser = sub.add_parser(command.name, help=command.description, description=command.description)
        command.add_arguments(command_parser)
        command_parser.set_defaults(run=command.run)
    return parser


def commands() -> list[Command]:
    """Every subcommand, in the order ``--help`` lists them."""
    from text2sql_dspy.optimize.compile_command import COMPILE  # imported here: they import this module
    from text2sql_dspy.optimize.evaluation import EVALUATE

    return [ASK, COMPILE, EVALUATE]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args.run, args)


def add_ask_arguments(ask: argparse.ArgumentParser) -> None:
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


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; a user's mistake prints one ``error:`` line and exits 2, a model service's failure
    exits 3 likewise, Ctrl-C exits 130."""
    from text2sql_dspy.programs.llm.service_errors import ModelServiceError, describe_lm_failure

    try:
        return command(args)
    except ModelServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MODEL_SERVICE_ERROR
    except Text2SQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        message = describe_lm_failure(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_MODEL_SERVICE_ERROR


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


ASK = Command("ask", "answer one question", add_ask_arguments, ask)


if __name__ == "__main__":
    sys.exit(main())
