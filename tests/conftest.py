"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_db import build_tiny_db, write_schema_dir


@pytest.fixture(scope="session")
def tiny_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A four-table SQLite file (organizations, users, login_attempts, blocks)."""
    return build_tiny_db(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def tiny_schemas(tiny_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A schema folder (one YAML per table) that matches ``tiny_db``."""
    return write_schema_dir(tmp_path_factory.mktemp("schemas"), tiny_db)
