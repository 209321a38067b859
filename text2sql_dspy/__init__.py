"""text2sql-dspy: a natural-language question in, correct and safe SQL over your database out.

    from text2sql_dspy import make_program, bundled_database
    agent = make_program("v2", db_path=bundled_database())
    print(agent.run("How many users are blocked right now?").sql)

The repository's ``programs/``, ``signatures/`` and ``optimize/`` folders install as
``text2sql_dspy.programs``, ``text2sql_dspy.signatures`` and ``text2sql_dspy.optimize``; the bundled
dataset's ``data/`` and ``schemas/`` as ``text2sql_dspy.data`` and ``text2sql_dspy/schemas``.

The names below are imported on first use, so that importing a submodule (the catalog, say) does not load
the programs and DSPy.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Baseline": ("text2sql_dspy.programs.agents.baseline", "Baseline"),
    "ReActAgent": ("text2sql_dspy.programs.agents.react", "ReActAgent"),
    "ReActAgentV2": ("text2sql_dspy.programs.agents.react", "ReActAgentV2"),
    "make_program": ("text2sql_dspy.programs.agents.registry", "make_program"),
    "bundled_database": ("text2sql_dspy.programs.bundled", "ensure_bundled_database"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'text2sql_dspy' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
