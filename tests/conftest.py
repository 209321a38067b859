"""Shared fixtures.

Tests never touch the user's files: for the whole session ``TEXT2SQL_CACHE`` points at a temporary folder
(holding links to the embedded model's GGUF and its checksum sidecar from the real cache, so that the model is
not rebuilt, and a copy of the built bundled databases), and every test gets its own empty example store in
``TEXT2SQL_EXAMPLES``. A test that sets either variable itself (``monkeypatch.setenv``) still wins.

Programs in tests decide by their own scores, not by the verifier shipped in the package, and draft as V2 without an
ensemble does (the draft, then samples), so that a scripted path stays what its test says whatever the shipped files
were fitted to; a test marked ``shipped_verifier``, or passing a ``verifier=`` or ``ensemble=``, uses one.

Under ``CI=true`` a test needing PostgreSQL, MariaDB or Chromium fails, naming what is missing, when that
service cannot start; elsewhere it is skipped, saying why (:func:`tests.services.unavailable`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import mariadb_server
from tests.postgres_server import Server, ServerUnavailable, load_test_databases, start
from tests.served_model import ServedModel, ServedModelUnavailable
from tests.served_model import start as start_served_model
from tests.services import unavailable
from tests.tiny_db import build_tiny_db, write_schema_dir
from text2sql_dspy.programs.agents.ensemble import Ensemble
from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.examples.store import STORE_ENV, default_store_path
from text2sql_dspy.programs.llm.model_files import MODEL_FILENAME

CACHE_ENV = "TEXT2SQL_CACHE"


@pytest.fixture(autouse=True)
def no_shipped_verifier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs built without ``verifier=`` get none, and without ``ensemble=`` the default one (the draft, then
    samples), unless the test is marked ``shipped_verifier``."""
    if request.node.get_closest_marker("shipped_verifier") is None:
        monkeypatch.setattr("text2sql_dspy.programs.agents.base.load_verifier", lambda: None)
        monkeypatch.setattr("text2sql_dspy.programs.agents.react.load_ensemble", Ensemble)
# What the user's own cache folder and example store are, before the session points them elsewhere.
USER_CACHE_DIR = default_cache_dir()
USER_STORE_PATH = default_store_path()
_SESSION_CACHE: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """Point the cache at a temporary folder before anything is collected (module-level code may read it)."""
    if _SESSION_CACHE:
        return
    folder = Path(tempfile.mkdtemp(prefix="t2s-cache-"))
    for name in (MODEL_FILENAME, f"{MODEL_FILENAME}.sha256"):  # the 1 GB model: linked, never rebuilt or written
        if (USER_CACHE_DIR / name).is_file():
            (folder / name).symlink_to((USER_CACHE_DIR / name).resolve())
    if (USER_CACHE_DIR / "databases").is_dir():  # built bundled databases: a copy, so that none is written there
        shutil.copytree(USER_CACHE_DIR / "databases", folder / "databases", symlinks=False, dirs_exist_ok=True)
    _SESSION_CACHE.append(folder)
    os.environ[CACHE_ENV] = str(folder)
    os.environ[STORE_ENV] = str(folder / "session-examples.sqlite")


def pytest_unconfigure(config: pytest.Config) -> None:
    while _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE.pop(), ignore_errors=True)


@pytest.fixture(autouse=True)
def own_example_store(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test starts with an empty example store of its own (``$TEXT2SQL_EXAMPLES``), never the user's."""
    path = tmp_path_factory.mktemp("examples") / "examples.sqlite"
    monkeypatch.setenv(STORE_ENV, str(path))
    if _SESSION_CACHE:
        monkeypatch.setenv(CACHE_ENV, str(_SESSION_CACHE[0]))
    return path


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
    second schema); skipped, saying why, where the server cannot start (under ``CI=true``: failed).
    """
    try:
        server = start()
    except ServerUnavailable as exc:
        unavailable("PostgreSQL", str(exc))
    try:
        load_test_databases(server)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mariadb() -> Iterator[mariadb_server.Server]:
    """A throwaway MariaDB server (mariadb-install-db in a temp folder, Unix socket only, no TCP port).

    Holds ``saas`` (the bundled database), ``spider_like`` and ``billing`` (a comment and a key across
    databases), readable by the SELECT-only user ``reader``; skipped, saying why, where the server cannot
    start (under ``CI=true``: failed).
    """
    try:
        server = mariadb_server.start()
    except mariadb_server.ServerUnavailable as exc:
        unavailable("MariaDB", str(exc))
    try:
        mariadb_server.load_test_databases(server)
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
