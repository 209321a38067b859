"""The user cache directory, where files too big or too slow to ship are built once."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def default_cache_dir() -> Path:
    """``$TEXT2SQL_CACHE`` or the platform user cache dir joined with ``text2sql-dspy``."""
    override = os.environ.get("TEXT2SQL_CACHE")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "text2sql-dspy"
