"""Warming (``Text2SQLProgram.warm``): one draft of one token whose prompt is a first question's up to the question,
on the embedded model only, and never where the schema shown depends on the question."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import dspy
import pytest

from tests.fakes import GOOD_SQL, logprob_lm, scripted_draft
from text2sql_dspy.programs.agents.baseline import Baseline


def messages_text(lm: object, call: int) -> str:
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda lm: True)


def test_warming_reads_a_first_question_s_prompt_up_to_its_question(
    tiny_db: Path, tiny_schemas: Path, embedded: None
) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)] * 2)
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm)
    assert program.warm() is True
    assert lm.engine.requests[0].config.max_tokens == 1 and len(lm.history) == 1
    program.run("How many users are suspended?")
    warmed, asked = messages_text(lm, 0), messages_text(lm, 1)
    shared = os.path.commonprefix([warmed, asked])
    schema = program.schema(program.source(), "How many users are suspended?").text
    assert schema in shared  # the whole schema lies in the part the cache serves
    assert "How many users are suspended?" not in shared


def test_nothing_is_warmed_on_another_model(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([])
    assert Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm).warm() is False
    assert not lm.engine.requests


def test_nothing_is_warmed_where_the_schema_shown_depends_on_the_question(
    tiny_db: Path, tiny_schemas: Path, embedded: None
) -> None:
    lm = logprob_lm([])
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, schema_budget=10)
    assert program.warm() is False and not lm.engine.requests


def test_a_failure_while_warming_in_the_background_is_logged_not_raised(
    tiny_db: Path, tiny_schemas: Path, embedded: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="text2sql_dspy.programs.agents.base")
    lm = logprob_lm([])  # no reply left: the draft's call fails inside the thread
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm)
    thread = program.warm_in_background()
    thread.join(timeout=30)
    assert not thread.is_alive() and any("warming" in r.getMessage() and "failed" in r.getMessage()
                                         for r in caplog.records)


def test_warming_in_the_background_uses_the_lm_of_the_callers_context(
    tiny_db: Path, tiny_schemas: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    monkeypatch.setattr("text2sql_dspy.programs.agents.base.built_lm", lambda *a,
                        **k: built.append(a) or logprob_lm([]))
    lm = logprob_lm([])
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword")  # its LM: dspy.settings.lm
    with dspy.context(lm=lm):
        thread = program.warm_in_background()
    thread.join(timeout=30)
    assert not thread.is_alive() and built == []  # no model of its own was built (loaded) in the thread


@pytest.mark.parametrize(
    ("cold_budget", "held", "whole"),
    [
        (10, 0.0, False),  # over the cold budget, nothing cached: the linked tables
        (10, 0.5, False),  # half read (another schema shares its start): still cold
        (10, 0.95, True),  # the cache holds the prefix: the whole schema
        (100_000, 0.0, True),  # within the cold budget: whole, cached or not
        (None, 0.0, True),  # no cold budget: today's rule
    ],
)
def test_a_cold_schema_over_the_cold_budget_shows_its_linked_tables(
    tiny_db: Path, tiny_schemas: Path, embedded: None, cold_budget: int | None, held: float, whole: bool
) -> None:
    from text2sql_dspy.programs.llm.stable_prefix_adapter import schema_lead

    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)])
    leads: list[str] = []
    lm.engine.held_share = lambda lead: leads.append(lead) or held
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, top_k=1,
                       cold_budget=cold_budget)
    source = program.source()
    view = program.schema(source, "How many users are suspended?")
    assert view.whole is whole and program.is_cold(source) is (not whole)
    if cold_budget == 10:  # asked of the cache: the opening of a prompt over the whole schema
        assert leads[0] == schema_lead(program.schema(source, "How many users are suspended?", cold=False).text)
    if not whole:
        assert 1 <= len(view.tables) < len(source.catalog.tables)


def test_warming_reads_the_whole_schema_of_a_cold_database(tiny_db: Path, tiny_schemas: Path, embedded: None) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)])
    lm.engine.held_share = lambda lead: 0.0
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, top_k=1, cold_budget=10)
    assert program.warm() is True
    schema = program.schema(program.source(), "How many rows are there?", cold=False).text
    assert schema in messages_text(lm, 0)


def test_a_schema_too_large_to_show_whole_is_never_cold(tiny_db: Path, tiny_schemas: Path, embedded: None) -> None:
    """Over the schema budget every question is shown its retrieved tables, cached or not: there is nothing to read
    whole, so ``ask`` must not offer to."""
    lm = logprob_lm([])
    lm.engine.held_share = lambda lead: 0.0
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, top_k=1, cold_budget=10,
                       schema_budget=20)
    assert program.is_cold(program.source()) is False
    assert program.warm() is False


def test_another_model_is_never_cold(tiny_db: Path, tiny_schemas: Path) -> None:
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=logprob_lm([]), cold_budget=10)
    assert program.is_cold(program.source()) is False and program.schema(program.source(), "How many users?").whole


def test_a_cold_view_ranks_by_keywords_whatever_the_program_s_retrieval(
    tiny_db: Path, tiny_schemas: Path, embedded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from text2sql_dspy.programs.retrieval import schema_view

    asked: list[str] = []
    make_retriever = schema_view.make_retriever
    monkeypatch.setattr(schema_view, "make_retriever", lambda catalog,
                        kind: asked.append(kind) or make_retriever(catalog, "keyword"))
    lm = logprob_lm([])
    lm.engine.held_share = lambda lead: 0.0
    program = Baseline(tiny_db, schema_path=tiny_schemas, retrieval_type="semantic", lm=lm, top_k=1, cold_budget=10)
    view = program.schema(program.source(), "How many users are suspended?")
    assert not view.whole and asked == ["keyword"]  # no embedding model loaded for a first answer


def test_an_agent_warms_the_first_question_s_draft_and_a_follow_up_s_edit(
    tiny_db: Path, tiny_schemas: Path, embedded: None
) -> None:
    from text2sql_dspy.programs.agents.react import ReActAgent

    follow_up = "SELECT email FROM users WHERE status = 'suspended'"
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)] * 3 + [scripted_draft(follow_up, 0.9)])
    program = ReActAgent(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm)
    assert program.warm() is True
    assert [r.config.max_tokens for r in lm.engine.requests] == [1, 1]
    chat = program.conversation()
    chat.ask("How many users are suspended?")
    assert chat.ask("Which ones?").sql == follow_up
    schema = program.schema(program.source(), "Which ones?").text
    for warmed, asked in ((0, 2), (1, 3)):  # the draft's warm-up and the first question; the edit's and the follow-up
        shared = os.path.commonprefix([messages_text(lm, warmed), messages_text(lm, asked)])
        assert schema in shared and "Which ones?" not in shared and "How many users are suspended?" not in shared
    assert "Change the previous query" in os.path.commonprefix([messages_text(lm, 1), messages_text(lm, 3)])
    assert "Change the previous query" not in messages_text(lm, 0)
