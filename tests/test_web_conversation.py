"""Conversations on the page and the JSON API: a follow-up names its conversation, sees the turns before it, never
crosses databases, and is saved as a question that stands alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft
from tests.web_fakes import client_for
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.web.service import ServeConfig, Service

SUSPENDED = "SELECT count(*) FROM users WHERE status = 'suspended'"
NAMES = "SELECT email FROM users WHERE status = 'suspended'"
STANDS_ALONE = "What are the emails of the suspended users?"


@pytest.fixture
def lm() -> DummyLM:
    return DummyLM([draft(SUSPENDED), draft(NAMES), {"question": STANDS_ALONE}])


@pytest.fixture
def service(tiny_db: Path, tmp_path: Path, lm: DummyLM) -> Service:
    config = ServeConfig(databases={"tiny": str(tiny_db), "copy": str(tiny_db)}, program="v1",
                         examples_path=tmp_path / "examples.sqlite")
    service = Service(config, lm=lm)
    yield service
    service.close()


def prompt_of(lm: DummyLM, call: int) -> str:
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


def test_a_follow_up_sees_the_turn_before_it_and_is_saved_standing_alone(service: Service, lm: DummyLM,
                                                                          tiny_db: Path) -> None:
    client = client_for(service)
    first = client.post("/api/ask", json={"question": "How many users are suspended?", "db": "tiny"}).json()
    assert first["sql"] == SUSPENDED and first["turn"] == 1 and len(first["conversation"]) >= 16
    second = client.post("/api/ask", json={"question": "Which ones?", "db": "tiny",
                                           "conversation": first["conversation"]}).json()
    assert second["sql"] == NAMES and second["turn"] == 2 and second["conversation"] == first["conversation"]
    assert "Earlier in this conversation" not in prompt_of(lm, 0)
    assert "- Question: How many users are suspended?\n  SQL: " + SUSPENDED in prompt_of(lm, 1)

    page = client.get(f"/jobs/{second['job']}").text
    assert f'data-conversation="{first["conversation"]}"' in page and 'class="follow-up"' in page
    assert "follow-up 1, after: How many users are suspended?" in page

    saved = client.post("/api/examples", json={"question": "Which ones?", "sql": NAMES, "db": "tiny",
                                               "job": second["job"]})
    assert saved.status_code == 201 and saved.json()["question"] == STANDS_ALONE
    assert "Which ones?" in prompt_of(lm, 2) and "How many users are suspended?" in prompt_of(lm, 2)
    stored = ExampleStore(service.config.examples_path).examples(open_source(str(tiny_db)), kind="pair")
    assert [(e.question, e.sql) for e in stored] == [(STANDS_ALONE, NAMES)]


def test_a_rewrite_that_points_back_is_not_stored_the_conversation_joined_is(tiny_db: Path, tmp_path: Path) -> None:
    lm = DummyLM([draft(SUSPENDED), draft(NAMES),
                  {"question": "What are the emails of the users in the previous query?"}])
    config = ServeConfig(databases={"tiny": str(tiny_db)}, program="v1", examples_path=tmp_path / "examples.sqlite")
    service = Service(config, lm=lm)
    try:
        client = client_for(service)
        first = client.post("/api/ask", json={"question": "How many users are suspended?", "db": "tiny"}).json()
        second = client.post("/api/ask", json={"question": "Which ones?", "db": "tiny",
                                               "conversation": first["conversation"]}).json()
        saved = client.post("/api/examples", json={"question": "Which ones?", "sql": NAMES, "db": "tiny",
                                                   "job": second["job"]})
        assert saved.status_code == 201 and saved.json()["question"] == "How many users are suspended? / Which ones?"
    finally:
        service.close()


def test_a_new_question_starts_a_new_conversation(service: Service, lm: DummyLM) -> None:
    client = client_for(service)
    first = client.post("/api/ask", json={"question": "How many users are suspended?"}).json()
    again = client.post("/api/ask", json={"question": "Which ones?"}).json()
    assert again["conversation"] != first["conversation"] and again["turn"] == 1
    assert "Earlier in this conversation" not in prompt_of(lm, 1)


@pytest.mark.parametrize(("conversation", "db", "expected"), [
    ("no-such-id", "tiny", "no conversation 'no-such-id' here"),
    (None, "copy", "is over database 'tiny', not 'copy'"),  # a conversation never crosses databases
])
def test_a_follow_up_outside_its_conversation_is_refused(service: Service, conversation: str | None, db: str,
                                                        expected: str) -> None:
    client = client_for(service)
    first = client.post("/api/ask", json={"question": "How many users are suspended?", "db": "tiny"}).json()
    body = {"question": "Which ones?", "db": db, "conversation": conversation or first["conversation"]}
    for url in ("/api/ask", "/jobs"):
        refused = client.post(url, json=body)
        assert refused.status_code == 422 and expected in refused.json()["detail"]
        assert "start a new" in refused.json()["detail"]


def test_a_saved_first_question_is_not_rewritten(service: Service, lm: DummyLM) -> None:
    client = client_for(service)
    first = client.post("/api/ask", json={"question": "How many users are suspended?"}).json()
    saved = client.post("/api/examples", json={"question": "How many users are suspended?", "sql": SUSPENDED,
                                               "job": first["job"]})
    assert saved.json()["question"] == "How many users are suspended?" and len(lm.history) == 1


def test_a_corrected_turn_replaces_the_answer_in_the_conversation(tiny_db: Path, tmp_path: Path) -> None:
    wrong = "SELECT count(id) FROM users"
    lm = DummyLM([draft(wrong), draft(NAMES)])
    config = ServeConfig(databases={"tiny": str(tiny_db)}, program="v1", examples_path=tmp_path / "examples.sqlite")
    service = Service(config, lm=lm)
    try:
        client = client_for(service)
        first = client.post("/api/ask", json={"question": "How many users are suspended?"}).json()
        assert first["sql"] == wrong
        fixed = client.post("/api/examples", json={"question": "How many users are suspended?", "sql": SUSPENDED,
                                                   "job": first["job"]})
        assert fixed.status_code == 201
        client.post("/api/ask", json={"question": "Which ones?", "conversation": first["conversation"]})
    finally:
        service.close()
    follow_up = prompt_of(lm, 1)  # the follow-up is drafted as a change of the corrected query, not of the wrong one
    assert f"[[ ## previous_sql ## ]]\n{SUSPENDED}" in follow_up and wrong not in follow_up
