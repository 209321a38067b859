"""The repository's scripts (``benchmarks/``, ``data/``), which are not package modules, imported by path for their
tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def script(path: str) -> ModuleType:
    """The script at ``path`` (relative to the repository, e.g. ``benchmarks/fit_verifier.py``) as a module,
    registered under its file's stem (a dataclass of it looks its module up)."""
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, REPO / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
