"""What one validation found so far: errors, warnings, suggestions and the tables read.

Ordered and de-duplicated. One :class:`Findings` lives on the stack of one ``validate`` call and
is written by the name check, the warnings and the dry run in turn; never kept on a validator.
"""

from __future__ import annotations

__all__ = ["Findings"]


class Findings:
    """Per-call accumulator; each list keeps the order of first mention and drops repeats."""

    def __init__(self) -> None:
        self._errors: dict[str, None] = {}
        self._warnings: dict[str, None] = {}
        self._suggestions: dict[str, None] = {}
        self._tables: dict[str, None] = {}

    errors = property(lambda self: list(self._errors))
    warnings = property(lambda self: list(self._warnings))
    suggestions = property(lambda self: list(self._suggestions))
    tables = property(lambda self: list(self._tables))

    def error(self, message: str, *suggestions: str) -> None:
        """Record an error and the hints that go with it (empty hints are skipped)."""
        self._errors[message] = None
        for s in suggestions:
            self.suggest(s)

    def warn(self, message: str) -> None:
        self._warnings[message] = None

    def suggest(self, message: str) -> None:
        if message:
            self._suggestions[message] = None

    def read(self, table: str) -> None:
        """Record a catalog table the query reads."""
        self._tables[table] = None
