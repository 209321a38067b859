"""A served app over scripted replies, for the web tests and the load benchmark."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils import DummyLM
from fastapi.testclient import TestClient

from tests.fakes import draft
from text2sql_dspy.programs.web.app import create_app
from text2sql_dspy.programs.web.service import ServeConfig, Service

FAILED_BY_USER = (
    "SELECT u.email, count(*) AS failed FROM users u JOIN login_attempts l ON l.user_id = u.id "
    "WHERE l.success = 0 GROUP BY u.email ORDER BY failed DESC"
)


class GatedLM(DummyLM):
    """DummyLM whose every reply waits for ``gate`` (set it to let the model answer)."""

    def __init__(self, answers: list[dict[str, Any]], gate: threading.Event):
        super().__init__(answers)
        self.gate = gate

    def _format_answer_fields(self, field_names_and_values: dict[str, Any]) -> str:
        self.gate.wait(30)
        return super()._format_answer_fields(field_names_and_values)


def scripted_service(db: Path, lm: DummyLM | None = None, **config: Any) -> Service:
    """A server over ``db`` (named ``tiny``) running V1 on ``lm`` (default: the same draft, many times)."""
    config.setdefault("program", "v1")
    return Service(ServeConfig(databases={"tiny": str(db)}, **config), lm=lm or DummyLM([draft(FAILED_BY_USER)] * 200))


def client_for(service: Service, **app_options: Any) -> TestClient:
    return TestClient(create_app(service, **app_options))


@dataclass
class Surfaces:
    """One question's answer as each surface gave it: ``ask --json``, ``/api/ask``, the page, an ``evaluate`` record."""

    cli: dict[str, Any]
    api: dict[str, Any]
    page: str
    record: dict[str, Any]


def on_every_surface(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], question: str, program: str,
                     lm: Callable[[], Any]) -> Surfaces:
    """``question`` asked of ``program`` over ``db`` (named ``tiny``, keyword retrieval, no example store) on every
    surface, each on a fresh ``lm()``; the evaluate record's gold query is :data:`FAILED_BY_USER`."""
    from text2sql_dspy.cli import main
    from text2sql_dspy.optimize import evaluation

    common = ["--db", str(db), "--program", program, "--retrieval", "keyword", "--no-examples"]
    with dspy.context(lm=lm()):
        assert main(["ask", question, *common, "--json"]) in (0, 1)
    cli = json.loads(capsys.readouterr().out)

    service = Service(ServeConfig(databases={"tiny": str(db)}, program=program), lm=lm(),
                      program_options={"retrieval_type": "keyword"})
    try:
        client = client_for(service)
        api = client.post("/api/ask", json={"question": question}).json()
        page = client.get(f"/jobs/{api['job']}").text
    finally:
        service.close()

    data = tmp_path / "data"
    (data / "database" / "tiny").mkdir(parents=True)
    (data / "test.json").write_text(json.dumps([{"db_id": "tiny", "question": question, "query": FAILED_BY_USER}]))
    (data / "database" / "tiny" / "tiny.sqlite").write_bytes(db.read_bytes())
    with dspy.context(lm=lm()):
        assert evaluation.main(["--data", str(data), "--program", program, "--retrieval", "keyword",
                                "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "records.jsonl").read_text().splitlines()[0])
    return Surfaces(cli, api, page, record)
