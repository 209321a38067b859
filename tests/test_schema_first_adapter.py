"""The schema goes ahead of the demos, so a new demo set keeps the schema's prompt prefix."""

import dspy

from text2sql_dspy.programs.llm.schema_first_adapter import IN_SYSTEM_MESSAGE, SchemaFirstAdapter
from text2sql_dspy.signatures import DraftSQL, JudgeSQL

SCHEMA = "CREATE TABLE users (id INTEGER PRIMARY KEY, blocked INTEGER);"
INPUTS = {"table_schemas": SCHEMA, "question": "How many users are blocked?", "hints": ""}


def demo(question: str) -> dspy.Example:
    return dspy.Example(table_schemas="CREATE TABLE a (x INTEGER);", question=question, hints="", sql="SELECT x FROM a")


def test_schema_sits_in_the_system_message_and_the_question_last() -> None:
    messages = SchemaFirstAdapter().format(DraftSQL, [demo("q0")], INPUTS)
    assert messages[0]["role"] == "system" and messages[0]["content"].endswith(SCHEMA)
    assert SCHEMA not in messages[-1]["content"] and IN_SYSTEM_MESSAGE in messages[-1]["content"]
    assert "CREATE TABLE a" in messages[1]["content"], "a demo keeps its own schema"


def test_two_demo_sets_share_the_prefix_through_the_schema() -> None:
    one = SchemaFirstAdapter().format(DraftSQL, [demo("first demo")], INPUTS)
    two = SchemaFirstAdapter().format(DraftSQL, [demo("another demo")], INPUTS)
    assert one[0] == two[0] and one[1] != two[1]


def test_signatures_without_a_schema_are_formatted_as_chat_adapter_does() -> None:
    inputs = {"question": "q", "sql_query": "SELECT 1", "execution_result": "1 row"}
    assert SchemaFirstAdapter().format(JudgeSQL, [], inputs) == dspy.ChatAdapter().format(JudgeSQL, [], inputs)
