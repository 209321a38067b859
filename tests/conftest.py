"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_server import Server, ServerUnavailable, load_test_databases, start
from tests.served_model import ServedModel, ServedModelUnavailable
from tests.served_model import start as start_served_model
from tests.tiny_db import build_tiny_db, write_schema_dir


@pytest.fixture(scope="session")
def tiny_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A four-table SQLite file (organizations, users, login_attempts, blocks)."""
    return build_tiny_db(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def tiny_schemas(tiny_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A schema folder (one YAML per table) that matches ``tiny_db``."""
    return write_schema_dir(tmp_path_factory.mktemp("schemas"), tiny_db)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    """A throwaway PostgreSQL server (initdb in a temp folder, Unix socket only), stopped after the session.

    Holds ``saas`` (the bundled database) and ``spider_like`` (made here, with mixed-case names and a
    second schema); skipped, saying why, only where the server binaries are missing.
    """
    try:
        server = start()
    except ServerUnavailable as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        load_test_databases(server)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def served_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """A real OpenAI-compatible server (llama-cpp-python's) over the embedded GGUF on 127.0.0.1, started once.

    Never skipped: a server that will not start fails the tests that need it, with its log.
    """
    try:
        server = start_served_model(log_dir=tmp_path_factory.mktemp("served-model"))
    except ServedModelUnavailable as exc:
        pytest.fail(f"the served model would not start: {exc}")
    try:
        yield server
    finally:
        server.stop()
