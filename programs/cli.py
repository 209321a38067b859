"""``text2sql ask``: a question in, SQL (and optionally its rows) out.

``text2sql ask "question" [--db PATH|URL] [--program baseline|v1|v2|PATH.json] [--model M] [--judge-model M]
[--trace] [--execute] [--save]`` prints the SQL, its confidence and the judge's score; ``--save`` stores the
pair in the example store. The whole command line is :mod:`text2sql_dspy.cli`.
"""

from __future__ import annotations

import argparse
import sys

from text2sql_dspy.programs.command import Command, add_view_arguments, positive_int, view_options

DOCS_HELP = (
    "column and table descriptions: a BIRD database_description/ folder (or the folder holding it), a dbt "
    "schema.yml, or a folder of dbt .yml files (default: database_description/ beside a SQLite file, if there)"
)

def add_program_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose the database and the program (``ask`` and ``chat``)."""
    parser.add_argument(
        "--db",
        help="database: a SQLite file, sqlite:///PATH, postgresql://USER@HOST/DBNAME or duckdb:///PATH.duckdb "
        "(default: the bundled demo database)",
    )
    parser.add_argument("--schema", help="folder of per-table schema files (default: schemas/<db_id> if it exists)")
    parser.add_argument("--docs", help=DOCS_HELP)
    parser.add_argument("--program", default="v2", help="baseline, v1, v2, or a compiled .json (default: v2)")
    parser.add_argument("--model",
                        help="agent LM: 'local' (default) or any LiteLLM string, e.g. anthropic/claude-sonnet-4-5")
    parser.add_argument("--judge-model", help="judge LM for v2 (default: the agent's model)")
    add_view_arguments(parser)
    parser.add_argument("--examples", help="the example store whose pairs and notes are shown, and where --save saves "
                        "(default: $TEXT2SQL_EXAMPLES or the cache dir; a compiled program: its own store)")
    parser.add_argument("--no-examples", action="store_true", help="show no stored pairs or notes")


def add_ask_arguments(ask: argparse.ArgumentParser) -> None:
    ask.add_argument("question")
    add_program_arguments(ask)
    ask.add_argument("--hint", default="",
                     help="what the question's terms mean, e.g. \"Title 1 funding is column c14\"")
    ask.add_argument("--trace", action="store_true", help="show the agent's reasoning steps")
    ask.add_argument("--execute", action="store_true", help="run the query read-only and show the first rows")
    ask.add_argument("--rows", type=positive_int, default=10, help="rows to show with --execute")
    ask.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ask.add_argument("--save", action="store_true", help="store the answer as a confirmed pair (same checks as learn)")
    ask.add_argument("--continue", dest="follow_up", action="store_true", help="a follow-up: the last question "
                     "asked (over the same database) and its answer are shown with this one")
    ask.add_argument("--pick", type=positive_int, help="when the answer is unsure: take reading N (1 or 2) without "
                     "asking, and store it as a confirmed pair")


def build_program(args: argparse.Namespace, db_path: str, **options: object):  # noqa: ANN201 - a Text2SQLProgram
    from text2sql_dspy.programs.agents.registry import make_program

    return make_program(
        args.program, db_path=db_path, schema_path=args.schema, docs=args.docs, model_id=args.model,
        judge_model_id=args.judge_model, examples=_examples_option(args), **view_options(args), **options,
    )


def ask(args: argparse.Namespace) -> int:
    from text2sql_dspy.programs.answer import check_question
    from text2sql_dspy.programs.bundled import ensure_bundled_database

    question = check_question(args.question)
    db_path = args.db or str(ensure_bundled_database())
    if args.save:  # a store that cannot be used fails now, before the model runs
        from text2sql_dspy.programs.examples.store import ExampleStore

        ExampleStore(args.examples)
    from text2sql_dspy.programs.retrieval.schema_view import DEFAULT_COLD_BUDGET

    program = build_program(args, db_path, cold_budget=DEFAULT_COLD_BUDGET)
    cold = program.is_cold(program.source(db_path))  # answered from its linked tables, then read whole (warm_after)
    from text2sql_dspy.programs.conversation import Turn, load_last, save_last

    turns = load_last(str(db_path)) if args.follow_up else []
    if args.follow_up and not turns:
        print("note: no earlier question over this database to follow up; answering this one alone", file=sys.stderr)
    answer = program.run(question, hint=args.hint, history=turns)
    if args.json:
        print(answer.model_dump_json(indent=2))
    if answer.alternatives and (args.pick is not None or not args.json):
        picked = pick_reading(answer, args.pick, show=not args.json)
        if picked is not None:
            args.save = True  # a picked reading is a confirmed pair
            answer = answer.model_copy(update={"sql": picked.sql, "explanation": ""})
    if answer.sql:
        save_last(str(db_path), [*turns, Turn.of(answer)])  # what --continue follows up on
    if args.json:
        return save_if_asked(args, program.source(db_path), question, answer.sql, turns, program.lm)
    print(answer.sql or f"-- no query ({answer.status}): {answer.reason}")
    closest = answer.chosen if not answer.sql else None
    if closest is not None:  # nothing passed the validator: the reading closest to passing, unrun, to correct
        print(f"-- the closest reading, which did not pass the validator (not run):\n{closest.sql}")
    line = f"\n{answer.confidence_line}"
    if answer.judge_score is not None:
        line += f" | judge score {answer.judge_score:.2f}"
    line += f" | {answer.metrics.lm_calls} LM calls | {answer.metrics.latency_s:.1f}s"
    if answer.metrics.cost_usd:
        line += f" | ${answer.metrics.cost_usd:.4f}"
    print(line)
    if answer.sql and answer.reason:
        print(f"note: {answer.reason}")
    for finding in answer.noted:
        print(f"check: {finding.message}")
    if args.trace:
        for i, step in enumerate(answer.steps, 1):
            generator = f" ({step.generator})" if step.generator and step.generator != step.kind else ""
            print(f"\n[{i}] {step.kind}{generator}" + (f": {step.thought}" if step.thought else ""))
            if step.sql:
                print(f"    {' '.join(step.sql.split())}")
            for note_line in step.note.splitlines():
                print(f"    | {note_line}")
    database = program.source(db_path).database
    if args.execute and answer.sql and database is not None:
        print_rows(database.execute(answer.sql, max_rows=args.rows))
    status = save_if_asked(args, program.source(db_path), question, answer.sql, turns, program.lm)
    if cold and sys.stdout.isatty():
        warm_after(program, db_path, len(answer.tables))
    elif cold:
        print(f"note: the schema is not cached yet, so the {len(answer.tables)} tables linked to the question were "
              "shown; ask on a terminal, or open text2sql chat, to read it whole once", file=sys.stderr)
    return status


def warm_after(program, db_path: str, shown: int) -> None:  # noqa: ANN001 - a Text2SQLProgram
    """Read the whole schema into the cache once the answer is out, so that the next question over it, in any
    process, is shown every table without waiting; Ctrl-C skips it."""
    print(f"\nnote: this first question over the database was shown the {shown} tables linked to it. Reading the "
          "whole schema once now, so the next questions see all of it (Ctrl-C skips)...", file=sys.stderr)
    try:
        program.warm(db_path)
    except KeyboardInterrupt:
        print("skipped: the next question will again be shown its linked tables", file=sys.stderr)


def _examples_option(args: argparse.Namespace) -> str | bool | None:
    """The store ``ask`` shows: none with --no-examples, the one given, a compiled program's own, else the default."""
    if args.no_examples:
        return False
    if args.examples:
        return args.examples
    return None if args.program.endswith(".json") else True


def pick_reading(answer, pick: int | None, *, show: bool = True):  # noqa: ANN001, ANN201 - Answer, Reading
    """An unsure answer's readings, printed (with ``show``); the one ``pick`` names, else asked for on a terminal
    (None: keep the first, unconfirmed)."""
    count = len(answer.alternatives)
    if pick is not None and not 1 <= pick <= count:
        raise SystemExit(f"text2sql: error: --pick {pick}: this answer has {count} readings (pick 1-{count})")
    if not show:
        return None if pick is None else answer.alternatives[pick - 1]
    print(f"-- unsure: {answer.reason}. Which did you mean?", file=sys.stderr)
    for n, reading in enumerate(answer.alternatives, 1):
        print(f"\n[{n}] {reading.sql}", file=sys.stderr)
        if reading.difference:
            print(f"    {'; '.join(reading.difference)}", file=sys.stderr)
        preview = reading.preview
        if preview is not None and preview.error is None:
            print("    " + " | ".join(preview.columns), file=sys.stderr)
            for row in preview.rows[:3]:
                print("    " + " | ".join("NULL" if v is None else str(v) for v in row), file=sys.stderr)
            print(f"    ({preview.row_count}{'+' if preview.truncated else ''} rows)", file=sys.stderr)
    if pick is None and sys.stdin.isatty():
        reply = input(f"\nPick 1-{count} (Enter keeps 1, unconfirmed): ").strip()
        pick = int(reply) if reply.isdigit() else None
    if pick is None:
        print("\n(reading 1 kept; --pick N takes one and stores it as a confirmed pair)\n", file=sys.stderr)
        return None
    if not 1 <= pick <= count:
        raise SystemExit(f"text2sql: error: pick {pick}: this answer has {count} readings (pick 1-{count})")
    print(file=sys.stderr)
    return answer.alternatives[pick - 1]


def save_if_asked(args: argparse.Namespace, source, question: str, sql: str, earlier=(), lm=None) -> int:  # noqa: ANN001
    """``ask --save``: store the answered pair (:func:`~.examples.commands.save_answer`); a refusal is a user error.
    A follow-up (``earlier``: the turns before it) is stored as a question that stands alone, rewritten by ``lm``
    (:func:`~.conversation.question_to_store`)."""
    if args.save:
        from text2sql_dspy.programs.conversation import question_to_store
        from text2sql_dspy.programs.examples.commands import save_answer

        if earlier and sql:
            question = question_to_store(question, list(earlier), lm)
            print(f"stored as a question that stands alone: {question}", file=sys.stderr)
        save_answer(source, question, sql, args.examples)
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
