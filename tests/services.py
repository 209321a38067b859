"""Tests that need a service (PostgreSQL, MariaDB, Chromium): skipped on a user's machine without it, failed in CI.

Under ``CI=true`` (``.ci/run`` installs every service with apt, and fails when it cannot), a test whose service
cannot start fails, naming what is missing; elsewhere it is skipped, saying why.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(service: str, reason: str) -> NoReturn:
    """Skip a test whose service cannot start, saying why; under ``CI=true`` fail instead, naming what is missing."""
    if in_ci():
        pytest.fail(f"{service} is required under CI=true, but it is unavailable: {reason}", pytrace=False)
    pytest.skip(f"{service} tests skipped: {reason}")
