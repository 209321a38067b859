"""Everything that stays the same from question to question leads the prompt: instructions, format, schema."""

import dspy

from text2sql_dspy.programs.llm.stable_prefix_adapter import IN_SYSTEM_MESSAGE, StablePrefixAdapter
from text2sql_dspy.signatures import DraftSQL, JudgeSQL

SCHEMA = "CREATE TABLE users (id INTEGER PRIMARY KEY, blocked INTEGER);"
INPUTS = {"table_schemas": SCHEMA, "question": "How many users are blocked?", "hints": ""}
REMINDER = "Respond with the corresponding output fields"


def demo(question: str) -> dspy.Example:
    return dspy.Example(table_schemas="CREATE TABLE a (x INTEGER);", question=question, hints="", sql="SELECT x FROM a")


def test_schema_and_format_reminder_sit_in_the_system_message_and_the_question_last() -> None:
    messages = StablePrefixAdapter().format(DraftSQL, [demo("q0")], INPUTS)
    assert messages[0]["role"] == "system" and messages[0]["content"].endswith(SCHEMA)
    assert REMINDER in messages[0]["content"]
    last = messages[-1]["content"]
    assert SCHEMA not in last and IN_SYSTEM_MESSAGE in last and REMINDER not in last
    assert "CREATE TABLE a" in messages[1]["content"], "a demo keeps its own schema"


def test_two_demo_sets_and_two_questions_share_the_prefix_through_the_schema() -> None:
    one = StablePrefixAdapter().format(DraftSQL, [demo("first demo")], INPUTS)
    two = StablePrefixAdapter().format(DraftSQL, [demo("another demo")], {**INPUTS, "question": "Who is blocked?"})
    assert one[0] == two[0] and one[1] != two[1]


def test_signatures_without_a_schema_only_move_the_reminder() -> None:
    inputs = {"question": "q", "sql_query": "SELECT 1", "execution_result": "1 row"}
    ours, chat = StablePrefixAdapter().format(JudgeSQL, [], inputs), dspy.ChatAdapter().format(JudgeSQL, [], inputs)
    assert ours[-1]["content"] + "\n\n" + chat[-1]["content"].split("\n\n")[-1] == chat[-1]["content"]
    assert ours[0]["content"].startswith(chat[0]["content"]) and REMINDER in ours[0]["content"]
