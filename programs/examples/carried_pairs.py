"""Solved questions carried from other databases: a pool of question -> SQL pairs, the nearest shown to each question.

    pool = CarriedPairs.from_split("../shared/benchmarks/spider-train")   # Spider's layout: train.json, tables.json
    pool.pairs(source, "How many heads of departments are older than 56?")  # the k nearest, most similar first

Contract:

* A pair is never shown on its own database (same ``db_id``): what it teaches is how a question of that shape is
  answered, and on its own database it would be the answer.
* Questions are compared with their schema words and literal values masked, each by its own database's names
  (DAIL-SQL's question masking, :func:`~.selector.mask_words`), so pairs match on what is asked, not on which tables
  it names. Similarity is the cosine of the MiniLM embeddings the table retriever and the store's selector use.
* They reach the drafting step in its ``facts``, under :data:`CARRIED_HEADER`, which says whose names they are
  (:func:`~.selector.render_pairs`); the asked database's own pairs, from its store, come after them, nearer the
  question.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from text2sql_dspy.programs.dataset import gold_sql, tables_file
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.selector import mask_words, name_parts, schema_name_parts
from text2sql_dspy.programs.examples.store import StoredExample
from text2sql_dspy.programs.retrieval.embedder import encode_texts
from text2sql_dspy.programs.source import DataSource

__all__ = ["CARRIED_HEADER", "DEFAULT_K_CARRIED", "ORIGIN", "CarriedPairs"]

DEFAULT_K_CARRIED = 3
POOL_FORMAT = 1  # of a saved pool (:meth:`CarriedPairs.save`)
ORIGIN = "carried"
CARRIED_HEADER = ("-- Solved questions over other databases: their tables and columns are not yours. Reuse how the "
                  "SQL answers its question, with your own tables and columns:")


class CarriedPairs:
    """A pool of solved pairs over many databases and their masked-question embeddings (computed on first use)."""

    def __init__(self, pairs: Sequence[StoredExample], masked: Sequence[str], *, k: int = DEFAULT_K_CARRIED,
                 matrix: np.ndarray | None = None):
        """``pairs`` (``db_key`` holds each pair's ``db_id``) and ``masked``, each pair's question masked by its own
        database's names, in the same order; ``matrix``: their embeddings, one row each (default: computed on first
        use)."""
        if len(pairs) != len(masked) or (matrix is not None and len(matrix) != len(pairs)):
            raise ValueError("one masked question, and one embedding, per pair")
        self._pairs = list(pairs)
        self._masked = list(masked)
        self.k = k
        self._matrix = matrix
        self._lock = threading.Lock()

    def save(self, path: Path | str) -> None:
        """Write the pool to ``path`` (``.npz``): its pairs, masked questions and embeddings (int8, each row scaled by
        its largest value), so that loading it (:meth:`load`) embeds nothing."""
        matrix = self._embeddings()
        scale = np.maximum(np.abs(matrix).max(axis=1, keepdims=True), 1e-12) / 127.0
        np.savez_compressed(
            path, format=np.array(POOL_FORMAT), k=np.array(self.k), db=np.array([p.db_key for p in self._pairs]),
            question=np.array([p.question for p in self._pairs]), sql=np.array([p.sql for p in self._pairs]),
            masked=np.array(self._masked), vectors=np.round(matrix / scale).astype(np.int8),
            scale=scale.astype(np.float32))

    @classmethod
    def load(cls, path: Path | str, *, k: int | None = None) -> CarriedPairs:
        """A pool :meth:`save` wrote; :class:`ConfigurationError` naming the fix where it cannot be read."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["format"]) != POOL_FORMAT:
                    raise ValueError(f"format {int(data['format'])}, not {POOL_FORMAT}")
                pairs = [StoredExample(i, str(db), "pair", str(q), str(sql), ORIGIN, "")
                         for i, (db, q, sql) in enumerate(zip(data["db"], data["question"], data["sql"], strict=True))]
                matrix = data["vectors"].astype(np.float32) * data["scale"]
                return cls(pairs, [str(m) for m in data["masked"]], k=int(data["k"]) if k is None else k,
                           matrix=matrix / np.linalg.norm(matrix, axis=1, keepdims=True).clip(1e-12))
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigurationError(f"cannot read the pool of solved pairs {path}: {exc}. Reinstall the package, or "
                                     "build the pool again with `text2sql compile --carried FOLDER`.") from exc

    @classmethod
    def from_split(cls, folder: Path | str, split: str = "train", *, k: int = DEFAULT_K_CARRIED,
                   tables: Path | str | None = None) -> CarriedPairs:
        """The pairs of ``folder/<split>.json`` (``question``, ``db_id`` and the gold query: Spider's ``query``, BIRD's
        ``SQL``), masked by the names of the folder's tables file (:func:`~..dataset.tables_file`, or ``tables``); a
        row without them is skipped. A split of conversations (SParC's or CoSQL's ``database_id`` and
        ``interaction``) gives its follow-ups: every turn after a conversation's first."""
        folder = Path(folder)
        try:
            rows = json.loads((folder / f"{split}.json").read_text(encoding="utf-8"))
            tables = json.loads((Path(tables) if tables else tables_file(folder, split)).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"cannot read solved pairs from {folder}: {exc}. Give a folder in Spider's layout "
                f"({split}.json with question, query and db_id; tables.json with each database's names)."
            ) from exc
        if not isinstance(rows, list) or not isinstance(tables, list):
            raise ConfigurationError(f"cannot read solved pairs from {folder}: {split}.json and tables.json must each "
                                     "hold a JSON list, as Spider's do.")
        rows = [*_follow_ups(rows)] if any(isinstance(r, dict) and "interaction" in r for r in rows) else rows
        names = {t.get("db_id"): _spider_names(t) for t in tables if isinstance(t, dict)}
        pairs, masked = [], []
        for i, row in enumerate(r if isinstance(r, dict) else {} for r in rows):
            question, db_id = (" ".join(str(row.get(key) or "").split()) for key in ("question", "db_id"))
            sql = " ".join(_gold_or_empty(row).split())
            if question and sql and db_id:
                pairs.append(StoredExample(i, db_id, "pair", question, sql, ORIGIN, ""))
                masked.append(mask_words(question, names.get(db_id, set())))
        return cls(pairs, masked, k=k)

    def __len__(self) -> int:
        return len(self._pairs)

    def pairs(self, source: DataSource, question: str) -> list[StoredExample]:
        """The ``k`` pairs nearest ``question`` (masked by ``source``'s names) over databases other than ``source``'s,
        most similar first."""
        if self.k <= 0 or not self._pairs:
            return []
        scores = self._embeddings() @ encode_texts([mask_words(question, schema_name_parts(source))])[0]
        ranked = (i for i in np.argsort(-scores, kind="stable") if self._pairs[i].db_key != source.db_id)
        return [self._pairs[i] for _, i in zip(range(self.k), ranked)]

    def _embeddings(self):
        with self._lock:
            if self._matrix is None:
                self._matrix = np.asarray(encode_texts(self._masked))
            return self._matrix


def _follow_ups(conversations: list) -> Iterator[dict]:
    """Every turn after the first of each conversation, as a pair (``question``, ``query``, ``db_id``)."""
    for conversation in conversations:
        if not isinstance(conversation, dict):
            continue
        for turn in (conversation.get("interaction") or [])[1:]:
            if isinstance(turn, dict):
                yield {"question": turn.get("utterance"), "query": turn.get("query"),
                       "db_id": conversation.get("database_id")}


def _gold_or_empty(row: dict) -> str:
    try:
        return str(gold_sql(row))
    except ConfigurationError:
        return ""


def _spider_names(tables: dict) -> set[str]:
    """The name parts a question over a database in Spider's ``tables.json`` is masked by (as
    :func:`~.selector.schema_name_parts` reads a catalog)."""
    names = list(tables.get("table_names_original") or [])
    names += [column for _, column in tables.get("column_names_original") or [] if column != "*"]
    return name_parts(names)
