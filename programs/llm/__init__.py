"""Language-model layer: embedded GGUF assembly, the llama.cpp DSPy engine, LM factory (prices: :mod:`..usage`).

Import from the submodules (``programs.llm.factory.build_lm`` etc.); this
package module re-exports the public names lazily so importing it is cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "build_lm": "text2sql_dspy.programs.llm.factory",
    "resolve_model_name": "text2sql_dspy.programs.llm.factory",
    "is_local_model": "text2sql_dspy.programs.llm.factory",
    "LOCAL_MODEL": "text2sql_dspy.programs.llm.factory",
    "LlamaCppEngine": "text2sql_dspy.programs.llm.llama_engine",
    "EngineStats": "text2sql_dspy.programs.llm.shared_llama",
    "get_shared_llama": "text2sql_dspy.programs.llm.shared_llama",
    "ensure_local_model": "text2sql_dspy.programs.llm.model_files",
    "cost_usd": "text2sql_dspy.programs.usage",
    "price_known": "text2sql_dspy.programs.usage",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'text2sql_dspy.programs.llm' has no attribute {name!r}")
    return getattr(import_module(module), name)
