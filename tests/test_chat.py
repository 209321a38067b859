"""``text2sql chat`` and ``ask --continue``: follow-ups see the turns before them, /new starts over, a conversation
never crosses databases; the chat loop driven in a real terminal (tmux) on scripted replies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import GOOD_SQL, draft
from tests.services import unavailable
from text2sql_dspy.cli import main

NAMES = "SELECT email FROM users WHERE status = 'suspended'"


def user_prompt(lm: DummyLM, call: int) -> str:
    return [m for m in lm.history[call]["messages"] if m["role"] == "user"][-1]["content"]


def test_chat_answers_a_follow_up_with_the_turn_before_it_and_new_starts_over(
    tiny_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = iter(["How many users are suspended?", "Which ones?", "/new", "Which ones?", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    lm = DummyLM([draft(GOOD_SQL), draft(NAMES), draft(NAMES)])
    with dspy.context(lm=lm):
        assert main(["chat", "--db", str(tiny_db), "--program", "baseline", "--retrieval", "keyword"]) == 0
    out = capsys.readouterr().out
    assert GOOD_SQL in out and NAMES in out and "(a new conversation)" in out
    assert "- Question: How many users are suspended?" in user_prompt(lm, 1)  # the follow-up saw the first turn
    assert "Earlier in this conversation" not in user_prompt(lm, 2)  # after /new it did not


def test_ask_continue_follows_up_on_the_last_question_over_the_same_database(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.sqlite"
    shutil.copy(tiny_db, other)
    base = ["--program", "baseline", "--retrieval", "keyword"]
    lm = DummyLM([draft(GOOD_SQL), draft(NAMES), draft(NAMES), draft(NAMES)])
    with dspy.context(lm=lm):
        assert main(["ask", "How many users are suspended?", "--db", str(tiny_db), *base]) == 0
        assert main(["ask", "Which ones?", "--db", str(tiny_db), "--continue", *base]) == 0
        assert main(["ask", "Which ones?", "--db", str(other), "--continue", *base]) == 0  # another database
        assert main(["ask", "Which ones?", "--db", str(tiny_db), *base]) == 0  # no --continue: a new conversation
    assert "- Question: How many users are suspended?" in user_prompt(lm, 1)
    assert "Earlier in this conversation" not in user_prompt(lm, 2)
    assert "Earlier in this conversation" not in user_prompt(lm, 3)
    assert "no earlier question over this database" in capsys.readouterr().err


SCRIPTED_CHAT = """
import sys, dspy
from dspy.utils.dummies import DummyLM
from text2sql_dspy.cli import main
replies = [{"sql": "SELECT count(*) FROM users WHERE status = 'suspended'"},
           {"sql": "SELECT email FROM users WHERE status = 'suspended'"}]
dspy.configure(lm=DummyLM(replies))
sys.exit(main(["chat", "--db", sys.argv[1], "--program", "baseline", "--retrieval", "keyword"]))
"""


def test_chat_in_a_real_terminal(tiny_db: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        unavailable("tmux", "tmux is not installed (apt-get install tmux; .ci/run does)")
    script = tmp_path / "chat.py"
    script.write_text(SCRIPTED_CHAT)
    session = f"t2s-chat-{os.getpid()}"
    env = {**os.environ, "TEXT2SQL_CACHE": str(tmp_path / "cache")}
    command = f"{sys.executable} {script} {tiny_db}; echo EXIT=$?; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command], check=True, env=env)

    def screen() -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout

    def wait_for(text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while text not in (shown := screen()):
            assert time.monotonic() < deadline, f"{text!r} never appeared; the terminal shows:\n{shown}"
            time.sleep(0.2)
        return shown

    try:
        wait_for("Ask a question about tiny")
        subprocess.run(["tmux", "send-keys", "-t", session, "How many users are suspended?", "Enter"], check=True)
        wait_for("LM calls")  # the answer, with how sure it is and what it cost
        subprocess.run(["tmux", "send-keys", "-t", session, "Which ones?", "Enter"], check=True)
        wait_for("SELECT email FROM users")
        subprocess.run(["tmux", "send-keys", "-t", session, "Up"], check=True)  # readline: the last question again
        wait_for("? Which ones?")
        subprocess.run(["tmux", "send-keys", "-t", session, "C-u", "C-d"], check=True)  # clear the line, then EOF
        shown = wait_for("EXIT=0")
        assert "bob@acme.test" in shown or "email" in shown  # the follow-up's rows
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_ask_continue_save_stores_the_follow_up_as_a_question_that_stands_alone(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    store = tmp_path / "examples.sqlite"
    base = ["--db", str(tiny_db), "--program", "baseline", "--retrieval", "keyword", "--examples", str(store)]
    lm = DummyLM([draft(GOOD_SQL), draft(NAMES), {"question": "What are the emails of the suspended users?"}])
    with dspy.context(lm=lm):
        assert main(["ask", "How many users are suspended?", *base]) == 0
        assert main(["ask", "Which ones?", "--continue", "--save", *base]) == 0
    pairs = ExampleStore(store).examples(open_source(str(tiny_db)), kind="pair")
    assert [(p.question, p.sql) for p in pairs] == [("What are the emails of the suspended users?", NAMES)]
    assert "stored as a question that stands alone: What are the emails" in capsys.readouterr().err
