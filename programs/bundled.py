"""The bundled demo database (``saas``): where its dataset and schema files are, and its SQLite file, built on first
use."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files
from pathlib import Path

from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.errors import DatabaseError

__all__ = ["BUNDLED_DATA", "BUNDLED_DB_ID", "BUNDLED_SCHEMAS", "bundled_database_file", "ensure_bundled_database"]

BUNDLED_DATA = Path(str(files("text2sql_dspy.data")))
BUNDLED_SCHEMAS = BUNDLED_DATA.parent / "schemas"  # the same layout in a checkout and in site-packages
BUNDLED_DB_ID = "saas"


def ensure_bundled_database() -> Path:
    """The bundled ``saas`` SQLite file, built from ``schemas/saas`` into the cache dir on first use."""
    from text2sql_dspy.data.build_database import build_database

    target = bundled_database_file()
    if target.is_file():
        return target
    try:
        return Path(build_database(target, schema_dir=BUNDLED_SCHEMAS / BUNDLED_DB_ID)).resolve()
    except OSError as exc:
        raise DatabaseError(
            f"cannot build the bundled database at {target}: {exc}. Fix: set TEXT2SQL_CACHE to a writable directory."
        ) from exc


def bundled_database_file() -> Path:
    """``<cache dir>/databases/saas-<digest>/saas.sqlite``, where the bundled database is built."""
    folder = f"{BUNDLED_DB_ID}-{_bundled_sources_digest()}"
    return (default_cache_dir() / "databases" / folder / f"{BUNDLED_DB_ID}.sqlite").resolve()


@cache
def _bundled_sources_digest() -> str:
    """A digest of the builder and the schema files: an edited schema or a new release gets a fresh database."""
    digest = hashlib.sha256()
    for source in [BUNDLED_DATA / "build_database.py", *sorted((BUNDLED_SCHEMAS / BUNDLED_DB_ID).glob("*.yaml"))]:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]
