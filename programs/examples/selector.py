"""Which stored pairs a question is shown: the k most similar verified pairs of the same database.

They reach the drafting step (:class:`~text2sql_dspy.signatures.DraftSQL`) as "Question: ... /
SQL: ..." lines in its ``facts``, with the question (:func:`render_pairs`), within the budget of
what each question is shown: the schema stays in the prompt's cached prefix, and a question's own
lines are the only prompt text read anew on every call, so they are kept short. Similarity is the
cosine of MiniLM sentence embeddings (the model the table retriever loads). With ``mask``, schema
words and literal values are masked in both questions first (DAIL-SQL's question masking), so
pairs are matched on what is asked rather than on which table it names.

The database's notes (short facts in the user's words) are not ranked: they are few, so all of
them follow the schema, where they stay in the prompt's cached prefix.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from text2sql_dspy.programs.examples.identity import normalise_question
from text2sql_dspy.programs.examples.store import ExampleStore, StoredExample
from text2sql_dspy.programs.retrieval.embedder import encode_texts
from text2sql_dspy.programs.retrieval.schema_view import estimated_tokens
from text2sql_dspy.programs.source import DataSource

__all__ = ["DEFAULT_K", "PAIRS_GUIDE", "ExampleSelector", "mask_question", "mask_words", "name_parts", "render_pairs",
           "schema_name_parts", "with_notes"]

DEFAULT_K = 4
MASK, UNKNOWN = "<mask>", "<unk>"
# The same for every question, so it stays in the cached prefix. It asks to adapt the pairs, not copy them:
# a small model otherwise carries the nearest pair's extra columns and clauses into its answer.
PAIRS_HEADER = "-- Verified questions and their SQL on this database:"
PAIRS_GUIDE = (
    "-- The verified questions shown before the question are answered right on this database: reuse their tables, "
    "joins, filters and conventions, but answer exactly the question asked (its own columns, limit and ordering)."
)


@dataclass
class _Index:
    """One database's pairs and their embeddings, valid while the stored pairs are unchanged."""

    signature: tuple
    pairs: list[StoredExample]
    matrix: Any  # (pairs, dim) unit vectors, or None without pairs
    notes: list[str] = field(default_factory=list)


class ExampleSelector:
    """Chooses demos from an :class:`~.store.ExampleStore` for each question (see the module docstring)."""

    def __init__(self, store: ExampleStore, *, k: int = DEFAULT_K, mask: bool = False,
                 exclude_same_question: bool = False):
        """``exclude_same_question``: never show a pair whose question is the one asked (for scoring on stored
        questions, as compile does, where showing a question its own answer would teach nothing)."""
        self.store = store
        self.k = k
        self.mask = mask
        self.exclude_same_question = exclude_same_question
        self._indexes: dict[str, _Index] = {}
        self._vectors: dict[str, Any] = {}  # text -> its embedding, so a new pair costs one encode, not all
        self._lock = threading.Lock()

    def pairs(self, source: DataSource, question: str) -> list[StoredExample]:
        """The ``k`` most similar pairs of ``source``'s database, most similar first."""
        return self.shown(source, question)[1]

    def notes(self, source: DataSource) -> list[str]:
        """Every note stored for ``source``'s database, oldest first."""
        return list(self._index(source).notes)

    def shown(self, source: DataSource, question: str) -> tuple[list[str], list[StoredExample]]:
        """What a question is shown, from one read of the store: the database's notes and its nearest pairs."""
        index = self._index(source)
        if self.k <= 0 or not index.pairs:
            return list(index.notes), []
        scores = index.matrix @ self._embed([self._text(question, source)])[0]
        asked = normalise_question(question)
        ranked = [i for i in np.argsort(-scores, kind="stable")
                  if not (self.exclude_same_question and normalise_question(index.pairs[i].question) == asked)]
        return list(index.notes), [index.pairs[i] for i in ranked[: self.k]]

    def _index(self, source: DataSource) -> _Index:
        examples = self.store.examples(source)
        signature = tuple((e.id, e.question, e.sql) for e in examples)
        key = source.store_key
        with self._lock:
            index = self._indexes.get(key)
            if index is None or index.signature != signature:
                pairs = [e for e in examples if e.kind == "pair"]
                matrix = self._embed([self._text(p.question, source) for p in pairs]) if pairs else None
                index = _Index(signature, pairs, matrix, [e.question for e in examples if e.kind == "note"])
                self._indexes[key] = index
            return index

    def _text(self, question: str, source: DataSource) -> str:
        return mask_question(question, source) if self.mask else question

    def _embed(self, texts: Sequence[str]) -> Any:
        """Unit embeddings of ``texts``, one row each; a text embedded before is not embedded again."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, encode_texts(missing)))
        return np.stack([self._vectors[t] for t in texts])


def render_pairs(pairs: Sequence[StoredExample], budget_tokens: int, header: str = PAIRS_HEADER) -> str:
    """``pairs`` (most similar first) as lines under ``header`` to show with the question, the most similar last,
    next to it.

    Pairs are taken most similar first while their lines fit ``budget_tokens`` (estimated); the most
    similar one is shown even if it alone does not fit. Empty without pairs.
    """
    blocks: list[str] = []
    used = estimated_tokens(header)
    for pair in pairs:
        block = f"Question: {' '.join(pair.question.split())}\nSQL: {' '.join(pair.sql.split())}"
        used += estimated_tokens(block)
        if blocks and used > budget_tokens:
            break
        blocks.append(block)
    return "\n\n".join([header, *reversed(blocks)]) if blocks else ""


def with_notes(schema_text: str, notes: list[str], *, pairs: bool = False) -> str:
    """The schema text followed by the user's notes, as SQL comments (part of the cached prefix); with
    ``pairs`` (verified pairs are shown as demos), a line on how to use them."""
    text = schema_text
    if notes:
        lines = "\n".join(f"-- {' '.join(note.split())}" for note in notes)
        text = f"{text}\n\n-- Notes from the people who use this database:\n{lines}"
    return f"{text}\n\n{PAIRS_GUIDE}" if pairs else text


def mask_question(question: str, source: DataSource) -> str:
    """``question`` with words naming a table or column of ``source`` replaced by ``<mask>`` and numbers or quoted
    values by ``<unk>``."""
    return mask_words(question, schema_name_parts(source))


def mask_words(question: str, names: set[str]) -> str:
    """``question`` with the words in ``names`` (lower-cased name parts, :func:`name_parts`), or their singular,
    replaced by ``<mask>`` and numbers or quoted values by ``<unk>``."""
    out = []
    for word in _words(question):
        bare = word.strip(".,;:!?()").lower()
        if _is_value(word):
            out.append(UNKNOWN)
        elif bare in names or bare.rstrip("s") in names:
            out.append(MASK)
        else:
            out.append(word)
    return " ".join(out)


def schema_name_parts(source: DataSource) -> set[str]:
    """The lower-cased names of ``source``'s tables and columns, and their ``_``-separated parts of 3 letters or
    more."""
    return name_parts([t.name for t in source.catalog.tables]
                      + [c.name for t in source.catalog.tables for c in t.columns])


def name_parts(names: list[str]) -> set[str]:
    """``names`` lower-cased, and their ``_``-separated parts of 3 letters or more."""
    return {part for name in names for part in name.lower().split("_") if len(part) > 2} | {n.lower() for n in names}


def _words(text: str) -> list[str]:
    """Words, with a quoted value ('...' or "...") kept as one word."""
    words, current, quote = [], [], None
    for char in unicodedata.normalize("NFKC", text):
        if quote is None and char in "'\"" and not current:
            quote = char
            current.append(char)
        elif quote is not None and char == quote:
            current.append(char)
            words.append("".join(current))
            current, quote = [], None
        elif quote is None and char.isspace():
            if current:
                words.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def _is_value(word: str) -> bool:
    bare = word.strip(".,;:!?()")
    if len(bare) >= 2 and bare[0] == bare[-1] and bare[0] in "'\"":
        return True
    return any(ch.isdigit() for ch in bare) and all(ch.isdigit() or ch in ".,-/:%$" for ch in bare)
