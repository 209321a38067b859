"""Which database a stored example belongs to, and when two questions are the same question.

Contract of :func:`database_key`: ``<db_id>-<16 hex digits>``, where ``db_id`` is the source's
``db_id`` lower-cased and the digits begin the SHA-256 of its catalog's shape: one line per table,
``table<TAB>col1,col2,...``, with table and column names lower-cased, columns sorted, lines sorted.
Types, descriptions, keys, sample values, row counts, the engine and the file's location play no
part. So the same database served from SQLite, PostgreSQL or DuckDB, or moved on disk, keeps its
pairs; a database whose tables or columns differ (another database, or this one after a migration)
gets another key, and pairs written for one are never shown on the other.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Protocol

from text2sql_dspy.programs.catalog.catalog import Catalog

KEY_DIGITS = 16
_TRAILING = " \t?.!;:"


class KeyedSource(Protocol):  # a DataSource (source.py imports this module, so it is not named here)
    """What :func:`database_key` reads: ``store_key``, :func:`catalog_key` of the source's ``db_id`` and catalog."""

    store_key: str


def database_key(source: KeyedSource) -> str:
    """The identity the store files ``source``'s examples under (see the module's contract)."""
    return source.store_key


def catalog_key(db_id: str, catalog: Catalog) -> str:
    """:func:`database_key` from its parts: a ``db_id`` and the catalog's table and column names."""
    lines = sorted(
        f"{table.name.lower()}\t{','.join(sorted(c.name.lower() for c in table.columns))}" for table in catalog.tables
    )
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return f"{db_id.lower()}-{digest[:KEY_DIGITS]}"


def normalise_question(text: str) -> str:
    """The form two questions are compared in: NFKC, case-folded, single spaces, no closing punctuation."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).rstrip(_TRAILING)
