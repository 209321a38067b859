"""Everything that stays the same from question to question leads the prompt: schema, instructions, format."""

from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from tests.fakes import RecordedLM
from text2sql_dspy.programs.llm.llama_engine import request_to_messages
from text2sql_dspy.programs.llm.stable_prefix_adapter import IN_SYSTEM_MESSAGE, StablePrefixAdapter, reply_prefill
from text2sql_dspy.signatures import DraftSQL, JudgeSQL

SCHEMA = "CREATE TABLE users (id INTEGER PRIMARY KEY, blocked INTEGER);"
INPUTS = {"table_schemas": SCHEMA, "question": "How many users are blocked?", "hints": ""}
REMINDER = "Respond with the corresponding output fields"


def demo(question: str) -> dspy.Example:
    return dspy.Example(table_schemas="CREATE TABLE a (x INTEGER);", question=question, hints="", sql="SELECT x FROM a")


def test_schema_leads_the_system_message_the_reminder_is_in_it_and_the_question_last() -> None:
    messages = StablePrefixAdapter().format(DraftSQL, [demo("q0")], INPUTS)
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith("[[ ## table_schemas ## "
                                                                                 f"]]\n{SCHEMA}\n\n")
    assert REMINDER in messages[0]["content"]
    last = messages[-1]["content"]
    assert messages[-1]["role"] == "user", "no prefill without an LM that continues a reply"
    assert SCHEMA not in last and IN_SYSTEM_MESSAGE in last and REMINDER not in last
    assert "CREATE TABLE a" in messages[1]["content"], "a demo keeps its own schema"


def test_two_demo_sets_and_two_questions_share_the_system_message() -> None:
    one = StablePrefixAdapter().format(DraftSQL, [demo("first demo")], INPUTS)
    two = StablePrefixAdapter().format(DraftSQL, [demo("another demo")], {**INPUTS, "question": "Who is blocked?"})
    assert one[0] == two[0] and one[1] != two[1]


def test_two_signatures_over_one_database_share_the_schema_prefix() -> None:
    repair = DraftSQL.append("trajectory", dspy.InputField(), type_=str).with_instructions("Repair the query.")
    draft = StablePrefixAdapter().format(DraftSQL, [], INPUTS)[0]["content"]
    step = StablePrefixAdapter().format(repair, [], {**INPUTS, "trajectory": ""})[0]["content"]
    shared = len(f"[[ ## table_schemas ## ]]\n{SCHEMA}\n\n")
    assert draft[:shared] == step[:shared] and draft != step


def test_signatures_without_a_schema_only_move_the_reminder() -> None:
    inputs = {"question": "q", "sql_query": "SELECT 1", "execution_result": "1 row"}
    ours, chat = StablePrefixAdapter().format(JudgeSQL, [], inputs), dspy.ChatAdapter().format(JudgeSQL, [], inputs)
    assert ours[-1]["content"] + "\n\n" + chat[-1]["content"].split("\n\n")[-1] == chat[-1]["content"]
    assert ours[0]["content"].startswith(chat[0]["content"]) and REMINDER in ours[0]["content"]


class ContinuingEngine:
    """A DSPy engine that continues a prefilled reply, as the embedded engine does: the reply is prefill + its text."""

    def __init__(self, continuation: str):
        self.continuation = continuation
        self.seen: list[list[dict[str, str]]] = []

    def complete(self, request: Any) -> Response:
        messages = request_to_messages(request)
        self.seen.append(messages)
        prefill = messages[-1]["content"] if messages[-1]["role"] == "assistant" else ""
        return Response(id="continuing-1", message=Message.assistant([TextPart(prefill + self.continuation)]),
                        model=request.model,
                        usage=Usage(input_tokens=1, output_tokens=1), finish_reason="stop")

    def stream(self, request: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


def test_an_lm_that_continues_a_reply_gets_the_first_field_marker_and_the_reply_parses(monkeypatch: Any) -> None:
    engine = ContinuingEngine("SELECT COUNT(*) FROM users WHERE blocked = 1")
    lm = dspy.LM("local/continuing", engine=engine, cache=False)
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda candidate: candidate is lm)
    with dspy.context(lm=lm, adapter=StablePrefixAdapter()):
        pred = dspy.Predict(DraftSQL)(**INPUTS)
    assert engine.seen[-1][-1] == {"role": "assistant", "content": reply_prefill(DraftSQL)} == {
        "role": "assistant", "content": "[[ ## sql ## ]]\n"}
    assert pred.sql == "SELECT COUNT(*) FROM users WHERE blocked = 1"


def test_an_unparseable_reply_is_one_call_and_an_error_not_a_json_retry() -> None:
    lm = RecordedLM(["no field markers at all"] * 3)
    with dspy.context(lm=lm, adapter=StablePrefixAdapter()):
        try:
            dspy.Predict(DraftSQL)(**INPUTS)
        except Exception as exc:  # noqa: BLE001 - the adapter's parse error
            assert "parse" in str(exc).lower()
        else:
            raise AssertionError("an unparseable reply must raise")
    assert len(lm.history) == 1, "no JSONAdapter fallback call"
