"""The question adapter: a linear map that moves a question's MiniLM embedding towards the tables it needs.

A question's unit embedding ``q`` becomes ``q + qW``, scaled back to unit length, before its cosine to each table's
embedding; the tables' embeddings are left as they are, so a catalog's cached table matrix serves with or without
it. ``W`` is fitted on spider-train's questions and the tables their gold queries read
(``benchmarks/tune_linker_embedder.py --write``) and ships in the package as ``question_adapter.json``, with what
it was fitted on. It belongs to the embedding model it was fitted with; a vector of another size is left alone.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from text2sql_dspy.programs.errors import ConfigurationError

__all__ = ["QuestionAdapter", "load_adapter", "ADAPTER_FILE"]

ADAPTER_FILE = "question_adapter.json"
FORMAT = 1


@dataclass(frozen=True)
class QuestionAdapter:
    """``weight`` (d x d, float32) and its provenance (``fitted_on``: sets, questions, databases, command)."""

    weight: np.ndarray
    fitted_on: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dimension(self) -> int:
        return int(self.weight.shape[0])

    def move(self, vectors: np.ndarray) -> np.ndarray:
        """Unit rows ``vectors`` (or one vector) moved by the adapter, unit length again; any other size unchanged."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[-1] != self.dimension:
            return vectors
        moved = vectors + vectors @ self.weight
        norms = np.linalg.norm(moved, axis=-1, keepdims=True)
        return np.where(norms > 0, moved / np.where(norms > 0, norms, 1.0), vectors)

    def to_json(self) -> dict[str, Any]:
        """The shipped form: the weight as float16 bytes in base64, so a refit on the same data writes the same file."""
        data = np.ascontiguousarray(self.weight, dtype="<f2").tobytes()
        return {"format": FORMAT, "dimension": self.dimension, "fitted_on": dict(self.fitted_on),
                "weight_float16": base64.b64encode(data).decode("ascii")}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QuestionAdapter:
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
            size = int(data["dimension"])
            raw = np.frombuffer(base64.b64decode(data["weight_float16"]), dtype="<f2")
            weight = raw.astype(np.float32).reshape(size, size)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigurationError(f"not a question adapter ({exc}); refit it with "
                                     "benchmarks/tune_linker_embedder.py --write") from exc
        return cls(weight, dict(data.get("fitted_on") or {}))

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


@cache
def load_adapter() -> QuestionAdapter | None:
    """The adapter shipped in the package (``question_adapter.json`` beside this module); None when it is missing."""
    try:
        text = resources.files("text2sql_dspy.programs.retrieval").joinpath(ADAPTER_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return QuestionAdapter.from_json(json.loads(text))
