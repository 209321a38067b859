"""Pairs in bulk: a JSON or CSV file of the user's pairs, or a Spider-format split, into the store.

A file is a JSON list of objects with ``question`` and ``sql`` (or Spider's ``query``), optionally ``kind``
(``pair`` or ``note``), ``origin`` and ``dialect``, as :meth:`~.store.ExampleStore.export` writes it; or a CSV with a
header naming ``question`` and ``sql`` (or ``query``) columns. A file that cannot be read is an
:class:`ExampleError`; an entry that fails the checks is refused, with its reason, in the
:class:`ImportReport`, and the others go in.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import sqlglot
from sqlglot import ErrorLevel
from sqlglot.errors import SqlglotError
from tqdm.auto import tqdm

from text2sql_dspy.programs.errors import ExampleError
from text2sql_dspy.programs.examples.identity import database_key
from text2sql_dspy.programs.source import DataSource, open_source


class Store(Protocol):
    """What an import needs of the example store (:class:`~.store.ExampleStore`)."""

    def save_pair(self, source: DataSource, question: str, sql: str, *, origin: str = ...) -> Any: ...

    def save_note(self, source: DataSource, text: str, *, origin: str = ...) -> Any: ...

FILE_FORMAT = 'a JSON list of {"question": ..., "sql": ...} or a CSV with question,sql columns'


@dataclass(frozen=True)
class Entry:
    """One pair or note to import, as read, before any check."""

    kind: str
    question: Any
    sql: Any
    origin: str
    dialect: str = ""  # what the SQL is written in, when known: Spider's gold is SQLite, an export says


@dataclass
class ImportReport:
    """What an import did: pairs ``added`` and ``merged`` (a stored pair corrected), ``unchanged`` ones already
    stored, and the ``refused`` ones as (question, sql, reason). ``keys`` maps each db_id to its database key."""

    added: int = 0
    merged: int = 0
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    unchanged: int = 0
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.added + self.merged + self.unchanged + len(self.refused)

    def absorb(self, other: ImportReport) -> None:
        """Add ``other``'s counts to this report (one database's import into a split's)."""
        self.added += other.added
        self.merged += other.merged
        self.unchanged += other.unchanged
        self.refused.extend(other.refused)
        self.keys.update(other.keys)

    def summary(self) -> str:
        return f"added {self.added}, merged {self.merged}, already stored {self.unchanged}, refused {len(self.refused)}"


def import_entries(store: Store, source: DataSource, entries: Iterable[Entry], *,
                   bar: tqdm | None = None) -> ImportReport:
    """Save each entry through the store's checks; a refusal is recorded, never raised. ``bar`` counts entries."""
    report = ImportReport(keys={source.db_id: database_key(source)})
    for entry in map(partial(in_dialect_of, source), entries):
        try:
            if entry.kind == "note":
                saved = store.save_note(source, entry.question, origin=entry.origin)
            else:
                saved = store.save_pair(source, entry.question, entry.sql, origin=entry.origin)
        except ExampleError as exc:
            report.refused.append((_text(entry.question), _text(entry.sql), str(exc)))
        else:
            setattr(report, saved.outcome, getattr(report, saved.outcome) + 1)
        if bar is not None:
            bar.update(1)
    return report


def progress_bar(total: int, desc: str, enabled: bool = True) -> tqdm:
    return tqdm(total=total, desc=desc, unit="pair", disable=not enabled or total == 0)


def read_entries(path: Path, origin: str) -> list[Entry]:
    """The entries of a JSON or CSV file (by its suffix; JSON unless it ends in .csv)."""
    try:
        text = path.expanduser().read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ExampleError(f"file not found: {path}. Give {FILE_FORMAT}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExampleError(f"cannot read {path}: {exc}. Give {FILE_FORMAT}, saved as UTF-8.") from None
    records = _csv_records(path, text) if path.suffix.lower() == ".csv" else _json_records(path, text)
    return [_entry(record, origin) for record in records]


def _json_records(path: Path, text: str) -> list[dict[str, Any]]:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExampleError(f"{path} is not valid JSON ({exc}). Give {FILE_FORMAT}.") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ExampleError(f"{path} must hold a JSON list of objects. Give {FILE_FORMAT}.")
    return records


def _csv_records(path: Path, text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))  # a quoted cell may hold newlines (SQL on several lines)
    names = {(name or "").strip().lower() for name in reader.fieldnames or []}
    if "question" not in names or not names & {"sql", "query"}:
        raise ExampleError(
            f"{path} needs a header row naming question and sql columns (found {sorted(names)}). Give {FILE_FORMAT}."
        )
    return [{(k or "").strip().lower(): v for k, v in row.items()} for row in reader]


def _entry(record: dict[str, Any], origin: str) -> Entry:
    kind = "note" if record.get("kind") == "note" else "pair"
    sql = record["sql"] if record.get("sql") is not None else record.get("query")
    return Entry(kind, record.get("question"), sql, str(record.get("origin") or origin),
                 str(record.get("dialect") or ""))


def import_split_into(store: Store, data_dir: Path, split: str, origin: str, *, progress: bool) -> ImportReport:
    """A Spider-format split's pairs, each into its ``db_id``'s database (found as :mod:`..dataset` finds it),
    one database at a time. Gold SQL is SQLite (Spider's convention); for another engine it is transpiled."""
    from text2sql_dspy.programs.dataset import load_split

    groups: dict[str, list[Entry]] = {}
    for example in load_split(data_dir, split):
        groups.setdefault(example.db_path, []).append(Entry("pair", example.question, example.gold_sql, origin,
                                                            "sqlite"))
    report = ImportReport()
    with progress_bar(sum(map(len, groups.values())), f"checking {split} pairs", progress) as bar:
        for db_path, entries in groups.items():
            source = open_source(db_path)
            bar.set_postfix_str(source.db_id, refresh=False)
            report.absorb(import_entries(store, source, entries, bar=bar))
    return report


def in_dialect_of(source: DataSource, entry: Entry) -> Entry:
    """``entry`` with its SQL written for ``source``'s engine: SQLite as gold queries are carried
    (:func:`~..db.dialect.transpile_gold`), another dialect by sqlglot. Unchanged when it is already,
    its dialect is unknown, or it cannot be carried (the checks then refuse it in the engine's own words)."""
    from text2sql_dspy.programs.db.dialect import TranspileError, transpile_gold

    if entry.kind != "pair" or entry.dialect in ("", source.dialect) or not isinstance(entry.sql, str):
        return entry
    try:
        if entry.dialect == "sqlite":
            sql = transpile_gold(entry.sql, source.dialect, source.column_names)
        else:
            sql = sqlglot.transpile(entry.sql, read=entry.dialect, write=source.dialect,
                                    unsupported_level=ErrorLevel.RAISE)[0]
    except (TranspileError, SqlglotError, ValueError, IndexError):
        return entry
    return replace(entry, sql=sql)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
