"""The CLI turns user mistakes into one-line errors that name the fix, with exit status 2."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from text2sql_dspy.cli import EXIT_USER_ERROR, main
from text2sql_dspy.optimize import compile_command, evaluation

REPO = Path(__file__).resolve().parent.parent


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["ask", "   "], "question is empty"),
        (["ask", "How many users?", "--db", "/nonexistent/x.sqlite"], "database file not found"),
        (["ask", "How many users?", "--program", "v9"], "unknown program 'v9'"),
        (["ask", "How many users?", "--program", "missing.json"], "compiled program not found"),
        (["ask", "How many users?", "--model", "no-provider-here", "--retrieval", "keyword"], "local"),
        (["ask", "How many users?", "--model", "anthropic/claude-haiku-4-5", "--retrieval", "keyword"],
         "ANTHROPIC_API_KEY"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tiny_db: Path, argv: list[str], needle: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    if "--db" not in argv:
        argv = [*argv, "--db", str(tiny_db)]
    code, err = run_cli(capsys, *argv)
    assert code == EXIT_USER_ERROR
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    assert needle in err


def test_corrupt_database_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00garbage" * 64)
    code, err = run_cli(capsys, "ask", "How many users?", "--db", str(junk))
    assert code == EXIT_USER_ERROR and "not a readable SQLite database" in err


@pytest.mark.parametrize(
    ("entry", "argv", "needle"),
    [
        ("cli", ["ask", "How many users?", "--rows", "-1"], "must be at least 1, got -1"),
        ("cli", ["ask", "How many users?", "--top-k", "0"], "must be at least 1, got 0"),
        ("cli", ["ask", "How many users?", "--schema-budget", "0"], "must be at least 1, got 0"),
        ("evaluate", ["--schema-budget", "0"], "must be at least 1, got 0"),
        ("cli", ["evaluate", "--limit", "0"], "must be at least 1, got 0"),
        ("cli", ["compile", "--program", "v2", "--optimizer", "bootstrap", "--out", "x.json", "--dev-limit", "-1"],
         "must be at least 0, got -1"),  # 0 is allowed there: no dev scoring
        ("evaluate", ["--limit", "0"], "must be at least 1, got 0"),
        ("evaluate", ["--threads", "two"], "'two' is not a whole number"),
        ("optimize", ["--program", "v2", "--optimizer", "bootstrap", "--out", "x.json", "--train-limit", "-3"],
         "must be at least 1, got -3"),
    ],
)
def test_counts_below_one_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], entry: str, argv: list[str], needle: str
) -> None:
    run = {"cli": main, "evaluate": evaluation.main, "optimize": compile_command.main}[entry]
    with pytest.raises(SystemExit) as exited:
        run(argv)
    assert exited.value.code == EXIT_USER_ERROR and needle in capsys.readouterr().err


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert "{ask,chat,compile,evaluate,calibrate,learn,examples,serve}" in out


@pytest.mark.parametrize(
    ("script", "usage"),
    [(["evaluate.py"], "usage: evaluate.py [-h] [--data DATA]"),
     (["-m", "optimize"], "usage: python -m optimize [-h]")],
)
def test_repository_scripts_still_run_from_the_root(script: list[str], usage: str) -> None:
    done = subprocess.run([sys.executable, *script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(usage)


def test_a_reader_that_leaves_early_ends_the_command_quietly() -> None:
    """`text2sql examples list | head`: no BrokenPipeError traceback, the shell's SIGPIPE status."""
    writer = ("import argparse, sys\n"
              "from text2sql_dspy.programs.command import run_command\n"
              "def many_lines(args):\n"
              "    for i in range(200_000):\n"
              "        print('row', i)\n"
              "    return 0\n"
              "sys.exit(run_command(many_lines, argparse.Namespace()))\n")
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"row 0\n"
    proc.stdout.close()  # the reader leaves after one line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_a_prompt_too_long_for_the_model_is_one_error_line_naming_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    """A compile whose prompt model overflows (MIPROv2's proposals, say) ends with the engine's advice, no traceback."""
    from dspy.utils.exceptions import ContextWindowExceededError

    from text2sql_dspy.programs.command import run_command

    message = ("[local/qwen2.5-coder-1.5b] Prompt of 22464 tokens does not fit the local model's context window "
               "n_ctx=12288. Shorten the prompt or raise n_ctx (TEXT2SQL_N_CTX).\n  To fix:\n    - Clear history")

    def overflowing(args: argparse.Namespace) -> int:
        raise ContextWindowExceededError(message=message)

    assert run_command(overflowing, argparse.Namespace()) == EXIT_USER_ERROR
    assert capsys.readouterr().err == f"error: {message.splitlines()[0]}\n"


def test_ask_hint_reaches_the_drafting_prompt(capsys: pytest.CaptureFixture[str], tiny_db: Path) -> None:
    import dspy
    from dspy.utils.dummies import DummyLM

    from tests.fakes import draft

    lm = DummyLM([draft("SELECT count(*) FROM users WHERE status = 'suspended'")])
    with dspy.context(lm=lm):
        code = main(["ask", "How many accounts are on hold?", "--db", str(tiny_db), "--program", "baseline",
                     "--retrieval", "keyword", "--no-examples", "--hint", "on hold means status = 'suspended'"])
    assert code == 0
    prompt = [m for m in lm.history[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert "Hint: on hold means status = 'suspended'" in prompt
    assert "SELECT count(*) FROM users WHERE status = 'suspended'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"retrieval_type": "semantic", "top_k": 5}),  # no budget given: the program's own
        (["--schema-budget", "2000", "--top-k", "3", "--retrieval", "keyword"],
         {"retrieval_type": "keyword", "top_k": 3, "schema_budget": 2000}),
    ],
)
def test_the_view_options_reach_the_program(argv: list[str], expected: dict[str, object]) -> None:
    from text2sql_dspy.programs.command import add_view_arguments, view_options

    parser = argparse.ArgumentParser()
    add_view_arguments(parser)
    assert view_options(parser.parse_args(argv)) == expected


class Warming:
    """A program whose warm-up is interrupted (``interrupt``) or runs."""

    def __init__(self, interrupt: bool) -> None:
        self.interrupt, self.warmed = interrupt, []

    def warm(self, db_path: str) -> bool:
        self.warmed.append(db_path)
        if self.interrupt:
            raise KeyboardInterrupt
        return True


@pytest.mark.parametrize("interrupt", [False, True])
def test_after_a_cold_answer_ask_reads_the_whole_schema_and_ctrl_c_skips_it(
    capsys: pytest.CaptureFixture[str], interrupt: bool
) -> None:
    from text2sql_dspy.programs.cli import warm_after

    program = Warming(interrupt)
    warm_after(program, "shop.sqlite", 8)
    err = capsys.readouterr().err
    assert program.warmed == ["shop.sqlite"] and "shown the 8 tables linked to it" in err
    assert ("skipped" in err) is interrupt


@pytest.mark.parametrize("cold", [False, True])
def test_ask_off_a_terminal_says_when_a_cold_schema_was_shown_its_linked_tables(
    capsys: pytest.CaptureFixture[str], tiny_db: Path, monkeypatch: pytest.MonkeyPatch, cold: bool
) -> None:
    import dspy
    from dspy.utils.dummies import DummyLM

    from tests.fakes import draft

    monkeypatch.setattr("text2sql_dspy.programs.agents.base.Text2SQLProgram.is_cold", lambda self, source: cold)
    with dspy.context(lm=DummyLM([draft("SELECT count(*) FROM users")])):
        code = main(["ask", "How many users?", "--db", str(tiny_db), "--program", "baseline", "--retrieval", "keyword",
                     "--no-examples"])
    captured = capsys.readouterr()
    assert code == 0 and "SELECT count(*) FROM users" in captured.out
    assert ("the schema is not cached yet" in captured.err) is cold


def test_ask_prints_the_closest_reading_where_no_query_passes(capsys: pytest.CaptureFixture[str],
                                                              tiny_db: Path) -> None:
    import dspy
    from dspy.utils.dummies import DummyLM

    from tests.fakes import draft

    bad = "SELECT count(*) FROM users WHERE colour = 'red'"
    with dspy.context(lm=DummyLM([draft(bad), draft(bad)])):
        main(["ask", "How many users are red?", "--db", str(tiny_db), "--program", "v1", "--retrieval", "keyword",
              "--no-examples"])
    out = capsys.readouterr().out
    assert "-- no query (failed)" in out and "colour" in out
    assert f"the closest reading, which did not pass the validator (not run):\n{bad}" in out
