"""What running one query gives back, and the executors' default limits (every engine shares them)."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_ROWS = 1000


@dataclass(frozen=True)
class QueryResult:
    """Outcome of one query: rows on success, else ``error`` (never both)."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    timed_out: bool = False
    denied: bool = False  # the engine refused it as a write or a forbidden action
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None
