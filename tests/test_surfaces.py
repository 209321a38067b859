"""One answer, every surface: ``ask --json``, ``/api/ask``, the web page and an ``evaluate`` record carry the same
fields for the same question, because each reads the one :class:`~text2sql_dspy.programs.answer.Answer` the program
built (only the timings differ)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from text2sql_dspy.cli import main
from text2sql_dspy.optimize import evaluation
from text2sql_dspy.programs.answer import Answer
from tests.fakes import draft
from text2sql_dspy.programs.web.service import ServeConfig, Service
from tests.web_fakes import FAILED_BY_USER, client_for

QUESTION = "Which users failed to log in, and how often?"


def same_fields(answer: dict) -> dict:
    """An answer's fields but its timings: what must not differ between surfaces."""
    answer = Answer.model_validate({k: v for k, v in answer.items() if k in Answer.model_fields})
    return answer.model_dump(mode="json", exclude={"metrics": {"latency_s"}})


def test_ask_json_the_api_the_page_and_an_evaluate_record_carry_the_same_answer(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))  # no earlier conversation, no calibration
    common = ["--db", str(tiny_db), "--program", "v1", "--retrieval", "keyword", "--no-examples"]
    with dspy.context(lm=DummyLM([draft(FAILED_BY_USER)])):
        assert main(["ask", QUESTION, *common, "--json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)

    service = Service(ServeConfig(databases={"tiny": str(tiny_db)}, program="v1"), lm=DummyLM([draft(FAILED_BY_USER)]),
                      program_options={"retrieval_type": "keyword"})
    try:
        client = client_for(service)
        from_api = client.post("/api/ask", json={"question": QUESTION}).json()
        page = client.get(f"/jobs/{from_api['job']}").text
    finally:
        service.close()

    data = tmp_path / "data"
    data.mkdir()
    (data / "test.json").write_text(json.dumps([{"db_id": "tiny", "question": QUESTION, "query": FAILED_BY_USER}]))
    (data / "database" / "tiny").mkdir(parents=True)
    (data / "database" / "tiny" / "tiny.sqlite").write_bytes(tiny_db.read_bytes())
    with dspy.context(lm=DummyLM([draft(FAILED_BY_USER)])):
        assert evaluation.main(["--data", str(data), "--program", "v1", "--retrieval", "keyword",
                                "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "records.jsonl").read_text().splitlines()[0])

    assert from_cli["sql"] == FAILED_BY_USER and from_cli["readings"][0]["findings"] == []
    assert same_fields(from_api) == same_fields(from_cli)
    assert {k: v for k, v in same_fields(record).items() if k != "readings"} == {
        k: v for k, v in same_fields(from_cli).items() if k != "readings"}
    assert [r["sql"] for r in record["readings"]] == [r["sql"] for r in from_cli["readings"]]
    # the page shows the same answer: its query, explanation, verdict, every reading and every step
    assert html.escape(from_cli["sql"], quote=False) in page and html.escape(from_cli["explanation"]) in page
    assert from_api["confidence_words"] in page and f"Trace ({len(from_cli['steps'])} steps)" in page
    assert f"Candidates ({len(from_cli['readings'])})" in page
