"""The ``text2sql`` command line: every subcommand, from the modules that define them.

``ask`` (:mod:`text2sql_dspy.programs.cli`), ``compile``, ``evaluate`` and ``calibrate``
(:mod:`text2sql_dspy.optimize`), ``learn`` and ``examples`` (:mod:`text2sql_dspy.programs.examples.commands`), ``serve``
(the web page and JSON API, :mod:`text2sql_dspy.programs.web.serve_command`). A user's mistake (empty
question, missing database, bad model string, missing API key) exits 2 with one line that names
the fix, never a traceback.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from text2sql_dspy.optimize.calibrate_command import CALIBRATE
from text2sql_dspy.optimize.compile_command import COMPILE
from text2sql_dspy.optimize.evaluation import EVALUATE
from text2sql_dspy.programs.chat_command import CHAT
from text2sql_dspy.programs.cli import ASK
from text2sql_dspy.programs.command import EXIT_USER_ERROR, Command, run_command
from text2sql_dspy.programs.examples.commands import EXAMPLES, LEARN
from text2sql_dspy.programs.web.serve_command import SERVE

__all__ = ["EXIT_USER_ERROR", "build_parser", "commands", "main"]


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
    return [ASK, CHAT, COMPILE, EVALUATE, CALIBRATE, LEARN, EXAMPLES, SERVE]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args.run, args)


if __name__ == "__main__":
    raise SystemExit(main())
