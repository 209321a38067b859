"""Teach it: "Right" and a corrected query go into the example store, through the store's own checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft
from tests.web_fakes import FAILED_BY_USER, client_for, scripted_service
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.web import service as web_service
from text2sql_dspy.programs.web.service import ServeConfig, Service

QUESTION = "Which users failed to log in, and how often?"
CORRECTED = (
    "SELECT u.email, count(*) AS failed FROM users u JOIN login_attempts l ON l.user_id = u.id "
    "WHERE l.success = 0 GROUP BY u.email ORDER BY failed DESC, u.email LIMIT 10"
)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "examples.sqlite"


@pytest.fixture
def service(tiny_db: Path, store_path: Path) -> Service:
    service = scripted_service(tiny_db, examples_path=store_path)
    yield service
    service.close()


def stored(store_path: Path, db: Path) -> list[tuple[str, str, str]]:
    return [(e.question, e.sql, e.origin) for e in ExampleStore(store_path).examples(open_source(str(db)), kind="pair")]


def test_right_saves_the_answered_pair_and_the_history_lists_it(service: Service, store_path: Path,
                                                                tiny_db: Path) -> None:
    client = client_for(service)
    answer = client.post("/api/ask", json={"question": QUESTION}).json()
    saved = client.post("/api/examples", json={"question": QUESTION, "sql": answer["sql"], "db": "tiny",
                                               "job": answer["job"]})
    assert saved.status_code == 201
    assert saved.json()["outcome"] == "added" and saved.json()["origin"] == "user"
    assert saved.json()["checked"].startswith("ran read-only")
    assert stored(store_path, tiny_db) == [(QUESTION, FAILED_BY_USER, "user")]
    history = client.get("/history").text
    assert "tiny · v1 · done · <strong>saved</strong>" in history
    assert f'data-example="{saved.json()["id"]}"' in history and "ORDER BY failed DESC" in history
    again = client.post("/api/examples", json={"question": QUESTION, "sql": answer["sql"]})
    assert again.status_code == 201 and again.json()["outcome"] == "unchanged"
    assert again.json()["id"] == saved.json()["id"]


def test_wrong_then_edit_run_and_save_replaces_the_sql(service: Service, store_path: Path, tiny_db: Path) -> None:
    client = client_for(service)
    first = client.post("/api/examples", json={"question": QUESTION, "sql": FAILED_BY_USER})
    ran = client.post("/check", json={"sql": CORRECTED, "db": "tiny"})
    assert 'data-ok="1"' in ran.text and "bob@acme.test" in ran.text
    corrected = client.post("/api/examples", json={"question": QUESTION, "sql": CORRECTED, "db": "tiny"})
    assert corrected.status_code == 201 and corrected.json()["outcome"] == "merged"
    assert corrected.json()["id"] == first.json()["id"]
    assert stored(store_path, tiny_db) == [(QUESTION, CORRECTED, "user")]


@pytest.mark.parametrize(
    ("sql", "question", "needle"),
    [
        ("DELETE FROM users", QUESTION, "the SQL is not a read"),
        ("UPDATE users SET status = 'active'", QUESTION, "the SQL is not a read"),
        ("SELECT nope FROM users", QUESTION, "invalid for database 'tiny'"),
        ("SELECT count(*) FROM users", "   ", "the question is empty"),
        ("", QUESTION, "the SQL is empty"),
    ],
)
def test_the_stores_checks_refuse_with_the_reason_and_store_nothing(
    service: Service, store_path: Path, tiny_db: Path, sql: str, question: str, needle: str
) -> None:
    refused = client_for(service).post("/api/examples", json={"question": question, "sql": sql})
    assert refused.status_code == 422 and needle in refused.json()["detail"]
    assert stored(store_path, tiny_db) == []


def test_bad_example_bodies_are_422(service: Service) -> None:
    client = client_for(service)
    assert client.post("/api/examples", json={"question": QUESTION}).status_code == 422
    assert client.post("/api/examples", json={"question": QUESTION, "sql": "SELECT 1", "id": 3}).status_code == 422
    unknown = client.post("/api/examples", json={"question": QUESTION, "sql": "SELECT 1", "db": "other"})
    assert unknown.status_code == 422 and "unknown database 'other'" in unknown.json()["detail"]


def test_saved_pairs_outlive_the_server(tiny_db: Path, store_path: Path) -> None:
    first = scripted_service(tiny_db, examples_path=store_path)
    try:
        assert client_for(first).post("/api/examples",
                                      json={"question": QUESTION, "sql": FAILED_BY_USER}).status_code == 201
    finally:
        first.close()
    second = scripted_service(tiny_db, examples_path=store_path)
    try:
        page = client_for(second).get("/").text
        assert QUESTION in page and "No questions asked yet." in page  # this server's history is new; the store is not
    finally:
        second.close()


def test_a_saved_pair_is_shown_to_the_next_answers(tiny_db: Path, store_path: Path) -> None:
    lm = DummyLM([draft(FAILED_BY_USER)] * 5)
    service = scripted_service(tiny_db, lm, examples_path=store_path)
    client = client_for(service)
    try:
        assert client.post("/api/examples", json={"question": QUESTION, "sql": CORRECTED}).status_code == 201
        assert client.post("/api/ask", json={"question": "Who failed to sign in most often?"}).status_code == 200
    finally:
        service.close()
    prompt = "\n".join(str(m.get("content")) for m in lm.history[-1]["messages"])
    assert QUESTION in prompt and "ORDER BY failed DESC, u.email LIMIT 10" in prompt  # the pair, as a demo


def test_the_store_is_the_one_given_else_the_compiled_programs_else_the_default(tmp_path: Path) -> None:
    compiled = tmp_path / "v2.json"
    compiled.write_text("{}")
    (tmp_path / "v2.meta.json").write_text('{"program": "v2", "examples": "v2.examples.sqlite"}')
    (tmp_path / "v2.examples.sqlite").touch()
    given = tmp_path / "mine.sqlite"
    assert web_service.store_path(ServeConfig({"tiny": "x"}, program=str(compiled), examples_path=given)) == given
    assert web_service.store_path(ServeConfig({"tiny": "x"}, program=str(compiled))) == tmp_path / "v2.examples.sqlite"
    # ExampleStore(None): the default store
    assert web_service.store_path(ServeConfig({"tiny": "x"}, program="v2")) is None
