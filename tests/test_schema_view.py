"""The schema a prompt shows: the whole schema within the budget, else the retrieved tables, as stable text."""

from __future__ import annotations

from pathlib import Path

from text2sql_dspy.programs.retrieval.retriever import make_retriever
from text2sql_dspy.programs.retrieval.schema_view import estimated_tokens, schema_view
from text2sql_dspy.programs.source import open_source

SUSPENDED = "How many users are suspended?"


def test_a_schema_within_the_budget_is_shown_whole_and_the_same_for_every_question(
    tiny_db: Path, tiny_schemas: Path
) -> None:
    source = open_source(tiny_db, tiny_schemas)
    first = schema_view(source, SUSPENDED, retrieval_type="keyword")
    second = schema_view(source, "Which organizations are on the Business plan?", retrieval_type="keyword")
    assert first.whole and first.tables == source.catalog.table_names
    assert first.text == second.text == source.whole_schema
    assert first.text.startswith("-- SQLite database 'tiny'\n\n")


def test_a_schema_over_the_budget_shows_the_retrieved_tables_in_catalog_order_without_scores(
    tiny_db: Path, tiny_schemas: Path
) -> None:
    source = open_source(tiny_db, tiny_schemas)
    budget = estimated_tokens(source.whole_schema) - 1
    view = schema_view(source, SUSPENDED, retrieval_type="keyword", top_k=2, budget_tokens=budget)
    ranked = [hit.name for hit in make_retriever(source.catalog, "keyword").search(SUSPENDED, 2)]
    assert not view.whole and ranked[0] == "users"  # the retriever ranks users first ...
    assert view.tables == [t for t in source.catalog.table_names if t in ranked]  # ... the view keeps catalog order
    assert view.tables == ["blocks", "organizations", "users"]
    assert "relevance" not in view.text and view.text.startswith("-- SQLite database 'tiny'\n\n")
    organizations = source.catalog.table("organizations")
    assert organizations.render(brief=True) in view.text  # reached only as a join target: shown briefly


def test_questions_on_the_same_tables_share_the_same_schema_text(tiny_db: Path, tiny_schemas: Path) -> None:
    source = open_source(tiny_db, tiny_schemas)
    views = [schema_view(source, q, retrieval_type="keyword", top_k=2, budget_tokens=10)
             for q in ("Which users were blocked and why?", "List blocked users by reason")]  # fmt: skip
    assert views[0].tables == views[1].tables == ["blocks", "users"]
    assert views[0].text == views[1].text  # byte for byte: the KV cache serves the second prompt's prefix
