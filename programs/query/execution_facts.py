"""What a query returned, as facts a judge can read: columns, row count, first rows, warning flags, or the error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from text2sql_dspy.programs.db.database import QueryResult

__all__ = ["ExecutionFacts", "facts_of"]

MAX_SHOWN_ROWS = 5
MAX_CELL_CHARS = 40


@dataclass(frozen=True)
class ExecutionFacts:
    """A summary of one :class:`QueryResult` (see :meth:`render`)."""

    ok: bool
    error: str | None
    columns: list[str]
    row_count: int
    truncated: bool
    first_rows: list[tuple]
    empty: bool
    all_null: bool
    single_repeated_value: bool

    @property
    def flags(self) -> list[str]:
        """Warning signs a wrong query often shows."""
        out = []
        if self.empty:
            out.append("EMPTY RESULT: no rows")
        if self.all_null:
            out.append("ALL VALUES ARE NULL")
        if self.single_repeated_value:
            out.append("every row holds the same value")
        return out

    def render(self) -> str:
        """A few lines for a prompt: the error, or the columns, the row count, the flags and the first rows."""
        if not self.ok:
            return f"ERROR: {self.error}"
        count = f"{self.row_count}{'+' if self.truncated else ''} row{'s' if self.row_count != 1 else ''}"
        lines = [f"columns: {', '.join(self.columns) or '(none)'}", count]
        lines += [f"warning: {flag}" for flag in self.flags]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in self.first_rows]
        if self.row_count > len(self.first_rows):
            lines.append(f"... {self.row_count - len(self.first_rows)} more rows")
        return "\n".join(lines)


def facts_of(result: QueryResult, *, max_rows: int = MAX_SHOWN_ROWS) -> ExecutionFacts:
    """Summarise ``result``; flags are computed over every returned row, not only the shown ones."""
    rows: Sequence[tuple] = result.rows if result.ok else []
    values = [v for row in rows for v in row]
    return ExecutionFacts(
        ok=result.ok,
        error=result.error,
        columns=list(result.columns),
        row_count=len(rows),
        truncated=result.truncated,
        first_rows=[tuple(r) for r in rows[:max_rows]],
        empty=result.ok and not rows,
        all_null=bool(values) and all(v is None for v in values),
        single_repeated_value=len(rows) > 1 and len(set(map(_hashable, rows))) == 1,
    )


def _hashable(row: Sequence[Any]) -> tuple:
    return tuple(v if isinstance(v, (int, float, str, bytes, type(None))) else repr(v) for v in row)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"
