"""What every ``text2sql`` subcommand shares: the :class:`Command` record, argparse types, and how errors exit."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from text2sql_dspy.programs.errors import Text2SQLError

__all__ = ["EXIT_MODEL_SERVICE_ERROR", "EXIT_USER_ERROR", "Command", "add_view_arguments", "non_negative_int",
           "positive_int", "run_command", "view_options"]

EXIT_USER_ERROR = 2
EXIT_MODEL_SERVICE_ERROR = 3  # a served or hosted model that cannot answer (down, too slow, garbled)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader has gone


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


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose what of a database the prompt shows (``ask``, ``chat``, ``evaluate``, ``compile``)."""
    parser.add_argument("--retrieval", choices=["semantic", "keyword"], default="semantic")
    parser.add_argument("--top-k", type=positive_int, default=5)
    parser.add_argument("--schema-budget", type=positive_int, metavar="TOKENS",
                        help="show the whole schema up to this many tokens, above it the --top-k tables a question "
                        "needs and those that join them (default: the program's, about a 31-table schema with its "
                        "documentation); fewer tokens read faster on a CPU, but each new set of tables is read anew")


def view_options(args: argparse.Namespace) -> dict[str, object]:
    """The program's options from :func:`add_view_arguments`' (a budget only where one was given)."""
    budget = {"schema_budget": args.schema_budget} if args.schema_budget is not None else {}
    return {"retrieval_type": args.retrieval, "top_k": args.top_k, **budget}


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


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; a user's mistake prints one ``error:`` line and exits 2, a model service's failure
    exits 3 likewise, Ctrl-C exits 130."""
    from dspy.utils.exceptions import ContextWindowExceededError

    from text2sql_dspy.programs.llm.service_errors import ModelServiceError, describe_lm_failure

    try:
        return command(args)
    except ModelServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MODEL_SERVICE_ERROR
    except Text2SQLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except ContextWindowExceededError as exc:  # its first line names the window (n_ctx) and how to widen it
        lines = str(getattr(exc, "message", None) or exc).strip().splitlines()
        print(f"error: {lines[0] if lines else 'a prompt does not fit the model context window'}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`text2sql examples list | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the interpreter's last flush cannot fail
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        message = describe_lm_failure(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_MODEL_SERVICE_ERROR
