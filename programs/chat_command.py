"""``text2sql chat``: questions and follow-ups over one database, each seeing the turns before it.

Line editing and a question history (up/down arrows) come from the standard library's ``readline``
where the platform has it. ``/new`` starts over, ``/quit`` (or Ctrl-D) leaves. An unsure answer shows
its two readings and asks which was meant; the one picked joins the conversation and is stored as a
confirmed pair, as ``ask --pick`` does.
"""

from __future__ import annotations

import argparse
import sys

from text2sql_dspy.programs.cli import add_program_arguments, build_program, pick_reading, print_rows, save_if_asked
from text2sql_dspy.programs.command import Command

PROMPT = "? "
HELP = "Ask a question about {db}. Follow-ups see the earlier turns. /new starts over, /quit (or Ctrl-D) leaves."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_program_arguments(parser)


def chat(args: argparse.Namespace) -> int:
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.conversation import Turn
    from text2sql_dspy.programs.errors import QuestionError

    _line_editing()
    db_path = args.db or str(ensure_bundled_database())
    program = build_program(args, db_path)
    program.warm_in_background(db_path)  # read while the user types the first question
    conversation = program.conversation(db_path)
    print(HELP.format(db=program.source(db_path).db_id))
    while True:
        try:
            line = input(PROMPT).strip()
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            continue
        if not line:
            continue
        if line in ("/quit", "/exit"):
            return 0
        if line == "/new":
            conversation.start_over()
            print("(a new conversation)")
            continue
        try:
            answer = conversation.ask(line)
        except QuestionError as exc:
            print(f"error: {exc}")
            continue
        if answer.alternatives:
            picked = pick_reading(answer, None)
            if picked is not None:
                conversation.turns[-1] = Turn(question=line, sql=picked.sql, result=conversation.turns[-1].result)
                args.save = True
                save_if_asked(args, program.source(db_path), line, picked.sql, conversation.turns[:-1], program.lm)
                answer = answer.model_copy(update={"sql": picked.sql})
        print(answer.sql or f"-- no query ({answer.status}): {answer.reason}")
        print(f"   {answer.confidence_line} | {answer.metrics.lm_calls} LM calls | {answer.metrics.latency_s:.1f}s")
        _rows(program.source(db_path), answer.sql)


def _rows(source, sql: str, limit: int = 10) -> None:  # noqa: ANN001 - DataSource, imported lazily
    if sql and source.database is not None:
        print_rows(source.database.execute(sql, max_rows=limit))


def _line_editing() -> None:
    """Arrow keys and a question history kept in the cache dir, where ``readline`` exists (not on Windows)."""
    if not sys.stdin.isatty():
        return
    try:
        import atexit
        import readline

        from text2sql_dspy.programs.cache import default_cache_dir
    except ImportError:
        return
    history = default_cache_dir() / "chat_history"
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        readline.read_history_file(history)
    except OSError:
        pass
    atexit.register(lambda: _write_history(readline, history))


def _write_history(readline, history) -> None:  # noqa: ANN001
    try:
        readline.write_history_file(history)
    except OSError:
        pass


CHAT = Command("chat", "ask questions and follow-ups over one database", add_arguments, chat)
