"""Worked examples carried from other databases: compiled drafting demos shown on a database they were not written over.

A demo written over one database teaches a small model that database's names: shown bare on another, its tables and
columns turn up in the answers. A *carried* demo is shown with the schema of its own database under
:data:`CARRIED_LEAD`, a line that says whose names they are, so that what it teaches is how its SQL answers its
question. :func:`carry` marks a demo so; :func:`shown_demos` is the one rule for which demos a question is shown.

The lead line is part of the demo's ``table_schemas``, so it travels with the compiled file and needs no field of
its own; a demo without it is shown only on a database whose tables and columns its SQL names (as before carrying).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from text2sql_dspy.programs.source import DataSource

__all__ = ["CARRIED_LEAD", "carry", "is_carried", "shown_demos"]

CARRIED_LEAD = "-- A worked example over another database: its tables and columns are its own, not the ones you query"


def carry(demo: Any) -> Any:
    """``demo`` with :data:`CARRIED_LEAD` opening its ``table_schemas`` (once); a demo with no schema is returned as
    it is, since one shown without the names it uses would teach them."""
    schemas = demo.get("table_schemas")
    if not isinstance(schemas, str) or not schemas.strip() or is_carried(demo):
        return demo
    return demo.copy(table_schemas=f"{CARRIED_LEAD}\n{schemas}")


def is_carried(demo: Any) -> bool:
    """Whether ``demo`` was marked by :func:`carry`."""
    schemas = demo.get("table_schemas")
    return isinstance(schemas, str) and schemas.startswith(CARRIED_LEAD)


def shown_demos(demos: Iterable[Any], source: DataSource | None) -> list[Any]:
    """The demos a question over ``source`` is shown: every carried demo, and each other demo whose SQL names
    nothing but ``source``'s own tables and columns (all of them where the database is not known)."""
    return [d for d in demos
            if source is None or is_carried(d) or source.names_only_its_own(str(d.get("sql") or ""))]
