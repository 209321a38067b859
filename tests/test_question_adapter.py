"""The question adapter: how it moves a question's embedding, its shipped form, and its place in the retriever."""

from __future__ import annotations

import numpy as np
import pytest

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.retrieval.adapter import QuestionAdapter, load_adapter
from text2sql_dspy.programs.retrieval.retriever import SemanticRetriever, table_document

# A weight that moves a question's first coordinate onto its second.
TOWARDS_SECOND = np.array([[-1.0, 1.0], [0.0, 0.0]], dtype=np.float32)


@pytest.mark.parametrize(("weight", "vector", "expected"), [
    (np.zeros((2, 2)), [0.6, 0.8], [0.6, 0.8]),               # no weight: unchanged
    (TOWARDS_SECOND, [1.0, 0.0], [0.0, 1.0]),                 # moved, and unit length again
    (TOWARDS_SECOND, [0.6, 0.8], [0.0, 1.0]),
    (TOWARDS_SECOND, [0.0, 1.0], [0.0, 1.0]),
    (TOWARDS_SECOND, [0.6, 0.0, 0.8], [0.6, 0.0, 0.8]),       # another model's size: left alone
])
def test_move(weight, vector, expected):
    moved = QuestionAdapter(np.asarray(weight, dtype=np.float32)).move(np.array(vector))
    assert np.allclose(moved, expected, atol=1e-6)


def test_move_takes_rows():
    moved = QuestionAdapter(TOWARDS_SECOND).move(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert np.allclose(moved, [[0.0, 1.0], [0.0, 1.0]])


def test_shipped_form_round_trips_at_float16_and_is_the_same_bytes_each_time(tmp_path):
    weight = np.random.default_rng(0).normal(scale=0.05, size=(8, 8)).astype(np.float32)
    adapter = QuestionAdapter(weight, {"sets": ["spider-train"], "questions": 3})
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    adapter.save(first)
    QuestionAdapter(weight.copy(), {"questions": 3, "sets": ["spider-train"]}).save(second)
    assert first.read_bytes() == second.read_bytes()
    import json

    back = QuestionAdapter.from_json(json.loads(first.read_text()))
    assert back.fitted_on == {"sets": ["spider-train"], "questions": 3}
    assert np.allclose(back.weight, weight, atol=1e-3) and back.weight.dtype == np.float32


@pytest.mark.parametrize("data", [
    {},
    {"format": 2, "dimension": 2, "weight_float16": ""},
    {"format": 1, "dimension": 3, "weight_float16": "AAAA"},    # too few numbers for 3 x 3
    {"format": 1, "dimension": "two", "weight_float16": "AAAA"},
])
def test_a_malformed_file_names_the_refit(data):
    with pytest.raises(ConfigurationError, match="tune_linker_embedder.py --write"):
        QuestionAdapter.from_json(data)


def test_the_package_ships_one_fitted_on_spider_train_for_minilm():
    adapter = load_adapter()
    assert adapter is not None
    assert adapter.dimension == 384 and adapter.fitted_on["sets"] == ["spider-train"]
    assert adapter.fitted_on["databases"] == 138
    assert np.abs(adapter.weight).max() > 0


# --------------------------------------------------------------------------- in the retriever


class TwoWords:
    """An embedding model of two coordinates: 'first' and 'second', by the words a text holds."""

    def encode(self, texts, **_):
        vectors = np.array([[t.count("first") + 0.1, t.count("second") + 0.1] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def two_tables() -> Catalog:
    return Catalog(db_id="two", tables=[
        Table(name="alpha", description="first first first", columns=[Column(name="id", type="INTEGER")]),
        Table(name="beta", description="second second second", columns=[Column(name="id", type="INTEGER")]),
    ])


@pytest.mark.parametrize(("adapter", "nearest"), [
    (None, "alpha"),
    (QuestionAdapter(np.zeros((2, 2), dtype=np.float32)), "alpha"),
    (QuestionAdapter(TOWARDS_SECOND), "beta"),
])
def test_the_retriever_ranks_by_the_moved_question(adapter, nearest):
    catalog = two_tables()
    assert "first" in table_document(catalog.tables[0])
    retriever = SemanticRetriever(catalog, TwoWords(), keyword_weight=0.0, adapter=adapter)
    cosine = retriever.cosine_scores("the first thing")
    assert max(cosine, key=cosine.get) == nearest


def test_the_retriever_uses_the_shipped_adapter_unless_told():
    assert SemanticRetriever(two_tables(), TwoWords()).adapter is load_adapter()
    assert SemanticRetriever(two_tables(), TwoWords(), adapter=None).adapter is None
