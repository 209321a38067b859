"""Tests that need a service (PostgreSQL, MariaDB, Chromium): skipped on a user's machine without it, failed in CI.

Under ``CI=true`` (``.ci/run`` installs every service with apt, and fails when it cannot), a test whose service
cannot start fails, naming what is missing; elsewhere it is skipped, saying why.
"""

from __future__ import annotations

import os
import subprocess
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(service: str, reason: str) -> NoReturn:
    """Skip a test whose service cannot start, saying why; under ``CI=true`` fail instead, naming what is missing."""
    if in_ci():
        pytest.fail(f"{service} is required under CI=true, but it is unavailable: {reason}", pytrace=False)
    pytest.skip(f"{service} tests skipped: {reason}")


def stop_process(process: subprocess.Popen, timeout_s: float = 30) -> None:
    """Terminate a test's server process, and kill it if it has not ended within ``timeout_s``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
