"""A served app over scripted replies, for the web tests and the load benchmark."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from dspy.utils import DummyLM
from fastapi.testclient import TestClient

from text2sql_dspy.programs.web.app import create_app
from text2sql_dspy.programs.web.service import ServeConfig, Service
from tests.fakes import draft

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
