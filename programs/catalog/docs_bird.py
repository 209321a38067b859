"""BIRD's ``database_description/<table>.csv`` files, read as BIRD ships them.

Each file describes one table, one row per column::

    original_column_name,column_name,column_description,data_format,value_description
    reactor_type,reactor type,the type of reactor,text,"PWR: pressurized water reactor"

The real files are messy: Windows line ends, Windows-1252 bytes that are not UTF-8, byte-order marks,
stray control characters, blank lines and trailing spaces in names. :func:`clean_text` makes them
readable; a row without a column name is skipped.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from pathlib import Path

from text2sql_dspy.programs.catalog.docs import Docs, described, name_key, one_line
from text2sql_dspy.programs.errors import SchemaFileError

FIELDS = ("original_column_name", "column_name", "column_description", "data_format", "value_description")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
UTF8_BOM = b"\xef\xbb\xbf"
CP1252_FALLBACK = "text2sql-cp1252-fallback"
EVIDENCE_LABEL = re.compile(r"^\s*common\s*sense\s*(evidence|reasoning)\s*:?\s*", re.IGNORECASE)


def clean_text(raw: bytes) -> str:
    """The bytes of a BIRD file as text: UTF-8 where it is, Windows-1252 for each byte that is not (a file may mix
    them); no BOMs or control characters."""
    text = raw.replace(UTF8_BOM, b"").decode("utf-8", errors=CP1252_FALLBACK)
    return CONTROL.sub("", text.replace("\ufeff", ""))


def _as_cp1252(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start : error.end].decode("cp1252", errors="replace"), error.end


codecs.register_error(CP1252_FALLBACK, _as_cp1252)


def read_bird_folder(folder: Path) -> Docs:
    """The docs of every ``<table>.csv`` in ``folder``; the file's name is the table's."""
    files = sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    if not files:
        raise SchemaFileError(f"{folder}: no <table>.csv files. "
                              "A BIRD database_description/ folder holds one per table.")
    columns: dict[tuple[str, str], str] = {}
    for file in files:
        table = name_key(file.stem)
        for column, text in read_bird_csv(file).items():
            columns[(table, column)] = text
    return Docs(columns=columns, origin=str(folder))


def read_bird_csv(path: Path) -> dict[str, str]:
    """``column key -> one line of text`` for one table's file."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SchemaFileError(f"cannot read {path}: {exc}.") from exc
    return bird_rows(clean_text(raw))


def bird_rows(text: str) -> dict[str, str]:
    """The column descriptions in a BIRD CSV's text (header row first; a file without one is read by position)."""
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if any(cell.strip() for cell in row)]
    if not rows:
        return {}
    header = [name_key(cell) for cell in rows[0]]
    if "original_column_name" in header:
        positions = [header.index(f) if f in header else None for f in FIELDS]
        rows = rows[1:]
    else:
        positions = list(range(len(FIELDS)))
    found = {}
    for row in rows:
        original, natural, description, _, values = (_cell(row, i) for i in positions)
        if not original:
            continue
        if not description and name_key(natural) not in ("", name_key(original).replace("_", " ")):
            description = natural  # the readable name is all the file says, and it says more than the identifier
        text = described(description, EVIDENCE_LABEL.sub("", values))
        if text:
            found[name_key(original)] = text
    return found


def _cell(row: list[str], index: int | None) -> str:
    return one_line(row[index], limit=10_000) if index is not None and index < len(row) else ""
