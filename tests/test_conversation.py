"""Conversations: earlier turns reach the drafting prompt (after the schema) and V2's judge; the program keeps no
state; the history is bounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import GOOD_SQL, draft, logprob_lm, scripted_draft, scripted_verdict
from text2sql_dspy.programs.agents.react import ReActAgent, ReActAgentV2
from text2sql_dspy.programs.conversation import Turn, render_history

SUSPENDED = GOOD_SQL
NAMES = "SELECT email FROM users WHERE status = 'suspended'"
ACTIVE = "SELECT email FROM users WHERE status = 'active'"


def prompt_of(lm: object, call: int) -> str:
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


def test_a_three_turn_conversation_shows_each_draft_the_turns_before_it(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = DummyLM([draft(SUSPENDED), draft(NAMES), draft(ACTIVE)])
    agent = ReActAgent(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm)
    chat = agent.conversation()
    assert chat.ask("How many users are suspended?").sql == SUSPENDED
    assert chat.ask("Which ones?").sql == NAMES
    assert chat.ask("And the active ones instead?").sql == ACTIVE
    first, second, third = (prompt_of(lm, i) for i in range(3))
    assert "Earlier in this conversation" not in first
    assert "- Question: How many users are suspended?\n  SQL: " + SUSPENDED + "\n  It returned 1 row: count(*)" \
        in second
    assert "Which ones?" in third and NAMES in third
    assert third.index("Earlier in this conversation") > third.index("CREATE TABLE")
    assert [t.question for t in chat.turns] == ["How many users are suspended?", "Which ones?",
                                                "And the active ones instead?"]
    assert not hasattr(agent, "turns") and "history" not in agent.dump_state()  # the program holds no conversation
    chat.start_over()
    assert chat.turns == []


def test_v2_judges_a_follow_up_in_its_conversation(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(NAMES, 0.97), scripted_verdict(0.9)])
    agent = ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm)
    turns = [Turn(question="How many users are suspended?", sql=SUSPENDED, result="1 row: count(*)")]
    answer = agent.run("Which ones?", history=turns)  # plain run() takes the history too
    assert answer.sql == NAMES
    judge = prompt_of(lm, 1)
    assert "Earlier in this conversation:\n- Question: How many users are suspended?" in judge
    assert "Now: Which ones?" in judge


def test_the_history_keeps_the_last_turns_within_its_budget() -> None:
    turns = [{"question": f"question {i}", "sql": f"SELECT {i}"} for i in range(6)]
    text = render_history(turns)
    assert "question 2" not in text and all(f"question {i}" in text for i in (3, 4, 5))
    long = [Turn(question="x" * 900, sql="SELECT 1"), Turn(question="the latest", sql="SELECT 2")]
    assert "x" * 900 not in render_history(long, max_chars=500) and "the latest" in render_history(long, max_chars=500)
    assert render_history(None) == "" and render_history([]) == ""


def test_a_follow_up_is_rewritten_to_stand_alone_and_a_bad_reply_falls_back() -> None:
    from text2sql_dspy.programs.conversation import standalone_question

    turns = [Turn(question="How many users are suspended?", sql=SUSPENDED)]
    lm = DummyLM([{"question": "  What are the emails of the suspended users? "}])
    assert standalone_question("Which ones?", turns, lm) == "What are the emails of the suspended users?"
    assert "How many users are suspended?" in prompt_of(lm, 0) and "Which ones?" in prompt_of(lm, 0)
    assert standalone_question("Which ones?", [], lm) == "Which ones?"  # a first question: no call
    assert len(lm.history) == 1
    for reply in ({"question": ""}, {"question": "x" * 2000}):
        standing_alone = standalone_question("Which ones?", turns, DummyLM([reply]))
        assert standing_alone == "How many users are suspended? / Which ones?"


@pytest.mark.parametrize(("rewrite", "stored"), [
    ("What are the emails of the suspended users?", "What are the emails of the suspended users?"),
    ("What are the emails of the users listed in the previous query?", "How many users are suspended? / Which ones?"),
    ("Which of those users were mentioned earlier?", "How many users are suspended? / Which ones?"),
])
def test_a_pair_is_stored_under_a_question_that_stands_alone(rewrite: str, stored: str) -> None:
    from text2sql_dspy.programs.conversation import question_to_store

    turns = [Turn(question="How many users are suspended?", sql=SUSPENDED)]
    assert question_to_store("Which ones?", turns, DummyLM([{"question": rewrite}])) == stored
    assert question_to_store("Which users are suspended?", [], DummyLM([])) == "Which users are suspended?"


@pytest.mark.parametrize(("rewrite", "expected"), [
    ("Which users are suspended?", False),
    ("What are the emails of the suspended users?", False),
    ("Which of the countries listed in the previous query have a plant?", True),
    ("What is the age of the students mentioned?", True),
    ("List the names returned by the SQL above.", True),
    ("Show the prior results sorted by name.", True),
    ("Which employees were listed above?", True),
    ("Which customers joined earlier than 2010?", True),  # "earlier" reads as pointing back: drafted as an edit
    ("How many owners list a dog?", False),
])
def test_a_rewrite_that_points_back_at_the_conversation(rewrite: str, expected: bool) -> None:
    from text2sql_dspy.programs.conversation import points_back

    assert points_back(rewrite) is expected
