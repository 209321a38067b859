"""Documentation as this package keeps it: a :class:`Docs` maps tables and ``(table, column)`` pairs to one line
of text each. The readers of the formats people keep it in (:mod:`.docs_bird`, :mod:`.docs_dbt`) build one;
:mod:`.documentation` finds them and writes their text into a catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_DOC_CHARS = 300  # one column's text; BIRD's value descriptions run to paragraphs
IN_WORD_APOSTROPHE = re.compile(r"(?<=[A-Za-z])'(?=[A-Za-z])")


def name_key(name: str) -> str:
    """How names are matched: case-insensitive, surrounding spaces (BIRD's trailing ones) ignored."""
    return name.strip().lower()


def one_line(text: str, limit: int = MAX_DOC_CHARS) -> str:
    """``text`` on one line, whitespace collapsed, cut at a word to at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 3].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."


def described(description: str, values: str = "") -> str:
    """A column's line: its description, then ``values: ...`` when the source says what values mean.

    An apostrophe inside a word becomes a typographic one (``hero's`` -> ``hero’s``): the schema's renderer
    reads a straight quote in a description as a quoted value and then shows no sample values."""
    text = " ".join(description.split())
    values = " ".join(values.split())
    if values:
        text = f"{text}; values: {values}" if text else f"values: {values}"
    return IN_WORD_APOSTROPHE.sub("\u2019", one_line(text))


@dataclass(frozen=True)
class Docs:
    """Descriptions by table (``tables``) and by ``(table, column)`` (``columns``), keyed by :func:`name_key`."""

    tables: dict[str, str] = field(default_factory=dict)
    columns: dict[tuple[str, str], str] = field(default_factory=dict)
    origin: str = ""

    def table(self, name: str) -> str:
        return self.tables.get(name_key(name), "")

    def column(self, table: str, column: str) -> str:
        return self.columns.get((name_key(table), name_key(column)), "")

    def __bool__(self) -> bool:
        return bool(self.tables or self.columns)

    def merged(self, other: Docs) -> Docs:
        """Both sets of docs; where both describe a thing, this one's text wins."""
        return Docs({**other.tables, **self.tables}, {**other.columns, **self.columns}, self.origin or other.origin)
