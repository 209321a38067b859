"""One answer, every surface: ``ask --json``, ``/api/ask``, the web page and an ``evaluate`` record carry the same
fields for the same question, because each reads the one :class:`~text2sql_dspy.programs.answer.Answer` the program
built (only the timings differ)."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft
from tests.web_fakes import FAILED_BY_USER, on_every_surface
from text2sql_dspy.programs.answer import Answer

QUESTION = "Which users failed to log in, and how often?"


def same_fields(answer: dict) -> dict:
    """An answer's fields but its timings: what must not differ between surfaces."""
    answer = Answer.model_validate({k: v for k, v in answer.items() if k in Answer.model_fields})
    found = answer.model_dump(mode="json", exclude={"metrics": {"latency_s"}})
    for spent in found["metrics"]["by_generator"].values():
        spent.pop("seconds")
    return found


def test_ask_json_the_api_the_page_and_an_evaluate_record_carry_the_same_answer(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))  # no earlier conversation, no calibration
    seen = on_every_surface(tiny_db, tmp_path, capsys, QUESTION, "v1", lambda: DummyLM([draft(FAILED_BY_USER)]))
    from_cli, from_api, page, record = seen.cli, seen.api, seen.page, seen.record

    assert from_cli["sql"] == FAILED_BY_USER and from_cli["readings"][0]["findings"] == []
    assert same_fields(from_api) == same_fields(from_cli)
    assert {k: v for k, v in same_fields(record).items() if k != "readings"} == {
        k: v for k, v in same_fields(from_cli).items() if k != "readings"}
    assert [r["sql"] for r in record["readings"]] == [r["sql"] for r in from_cli["readings"]]
    # the page shows the same answer: its query, explanation, verdict, every reading and every step
    assert html.escape(from_cli["sql"], quote=False) in page and html.escape(from_cli["explanation"]) in page
    assert from_api["verdict"] in page and f"Trace ({len(from_cli['steps'])} steps)" in page
    assert f"Candidates ({len(from_cli['readings'])})" in page
