"""V2's generators on scripted replies: each drafts from its own input and names itself; the ensemble's policy
spends a call only where the first draft is unsure (a table of cases); a reading's generator reaches every surface."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dspy
import numpy as np
import pytest

from tests.fakes import GOOD_SQL, Scripted, logprob_lm, scripted_draft
from text2sql_dspy.programs.agents.ensemble import MODEL_GENERATORS, Ensemble
from text2sql_dspy.programs.agents.generators import GENERATORS, Ask
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.agents.verifier import EARLY, FULL, GENERATED, Model, Verifier, generated_features
from text2sql_dspy.programs.conversation import History
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.carried_pairs import CARRIED_HEADER, CarriedPairs
from text2sql_dspy.programs.examples.store import StoredExample
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter

ALL_USERS = "SELECT count(*) FROM users"
SAME_ROWS = "SELECT count(id) FROM users WHERE status = 'suspended'"
EARLIER = [{"question": "How many users are suspended?", "sql": GOOD_SQL, "result": "1 row: count(*)"}]
EVERY = ("draft", "pairs", "columns", "linked", "sample", "sample")


@pytest.fixture(autouse=True)
def embedded_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted LMs stand for the embedded model, whose judge V2 asks only where it adds to the verifier."""
    monkeypatch.setattr("text2sql_dspy.programs.llm.factory.is_embedded_model", lambda lm: True)


def constant(names: tuple[str, ...], p: float) -> Model:
    return Model(names, (0.0,) * len(names), math.log(p / (1 - p)), (0.0,) * len(names), (1.0,) * len(names))


def verifier(early: float, full: float) -> Verifier:
    return Verifier(constant(EARLY, early), constant((*FULL, *GENERATED), full), sure=0.8, doubtful=0.3,
                    judge_helps=False, fitted_on={"sets": ["test"]}, early_sure=0.9)


def pool() -> CarriedPairs:
    pairs = [StoredExample(1, "other_db", "pair", "How many singers are there?", "SELECT count(*) FROM singer",
                           "carried", "")]
    return CarriedPairs(pairs, ["How many <mask> are there?"], k=1, matrix=np.ones((1, 1)))


def program(tiny_db: Path, tiny_schemas: Path, lm: dspy.LM, *, order: tuple[str, ...] = EVERY, budget: int = 6,
            stop: float | None = 0.8, early: float = 0.5, full: float = 0.5, **options) -> ReActAgentV2:
    return ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, max_repair_steps=0,
                        verifier=verifier(early, full), ensemble=Ensemble(order, budget, stop), **options)


def prompt_of(lm: dspy.LM, call: int) -> str:
    return "\n".join(str(m.get("content")) for m in lm.history[call]["messages"])


def asked(prog: ReActAgentV2, lm: dspy.LM, question: str = "How many users are suspended?", history=()) -> Ask:
    source = prog.source()
    hist = History.of(list(history))
    return Ask(question, source, prog.schema(source, question, history=hist.text), prog, lm, history=hist)


def test_the_generators_are_named_once_each() -> None:
    assert tuple(g.name for g in GENERATORS) == MODEL_GENERATORS


def test_each_generator_names_itself_and_drafts_from_its_own_input(
    tiny_db: Path, tiny_schemas: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("text2sql_dspy.programs.examples.carried_pairs.encode_texts", lambda texts: np.ones((1, 1)))
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9), scripted_draft(SAME_ROWS, 0.8), scripted_draft(ALL_USERS, 0.7),
                     Scripted({"columns": "users.status", "sql": GOOD_SQL}, {"sql": 0.6, "columns": 0.9})])
    prog = program(tiny_db, tiny_schemas, lm, carried=pool())
    ask = asked(prog, lm)
    with dspy.context(lm=lm, adapter=StablePrefixAdapter()):
        drafts = [prog.generators[name](ask, seed=1) for name in ("draft", "sample", "pairs", "columns")]
    assert [(d.generator, d.sql) for d in drafts] == [
        ("draft", GOOD_SQL), ("sample", SAME_ROWS), ("pairs", ALL_USERS), ("columns", GOOD_SQL)]
    assert [(r.config.temperature, r.config.seed) for r in lm.engine.requests[:2]] == [(None, None), (0.7, 1)]
    assert CARRIED_HEADER in prompt_of(lm, 2) and "SELECT count(*) FROM singer" in prompt_of(lm, 2)
    assert CARRIED_HEADER not in prompt_of(lm, 0)
    assert "Name the tables and columns" in prompt_of(lm, 3)
    assert drafts[3].confidence == pytest.approx(0.6)  # the SQL's own tokens, not the columns'


def test_a_generator_with_nothing_to_add_gives_none(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([])
    prog = program(tiny_db, tiny_schemas, lm)
    ask = asked(prog, lm)
    assert not prog.generators["pairs"].applies(ask)  # no pool
    assert prog.generators["linked"](ask) is None or set(ask.view.tables) != set(prog.source().catalog.table_names)
    assert not prog.generators["standalone"].applies(ask) and prog.generators["columns"].applies(ask)
    follow_up = asked(prog, lm, "Which ones?", EARLIER)
    assert prog.generators["standalone"].applies(follow_up) and not prog.generators["columns"].applies(follow_up)


def test_the_linked_view_shows_fewer_tables(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9)])
    prog = program(tiny_db, tiny_schemas, lm)
    ask = asked(prog, lm)
    wider = Ask(ask.question, ask.source, type(ask.view)([*ask.view.tables, "ghost"], ask.view.text, True), prog, lm)
    with dspy.context(lm=lm, adapter=StablePrefixAdapter()):
        found = prog.generators["linked"](wider)
    assert found is not None and found.generator == "linked" and found.sql == GOOD_SQL


def test_a_rewrite_that_points_back_gives_none_and_leaves_a_step(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([Scripted({"question": "Which of the users in the previous query?"})])
    prog = program(tiny_db, tiny_schemas, lm)
    steps = []
    ask = asked(prog, lm, "Which of them?", EARLIER)
    ask = Ask(ask.question, ask.source, ask.view, prog, lm, history=ask.history,
              trace=lambda kind, note: steps.append((kind, note)))
    with dspy.context(lm=lm, adapter=StablePrefixAdapter()):
        assert prog.generators["standalone"](ask) is None
    assert steps == [("rewrite", "Which of the users in the previous query?")]


# The policy, as a table: (early P, full P, stop, budget) -> the generators that drafted.
@pytest.mark.parametrize(
    ("early", "full", "stop", "budget", "ran"),
    [
        (0.95, 0.5, 0.8, 6, ["draft"]),  # sure after the first draft: one call
        (0.5, 0.85, 0.8, 6, ["draft", "pairs"]),  # unsure: the next generator; its choice is sure: stop
        (0.5, 0.5, 0.8, 6, ["draft", "pairs", "columns", "sample", "sample"]),  # never sure: every one that applies
        (0.5, 0.5, 0.8, 3, ["draft", "pairs", "columns"]),  # the budget is spent: stop
        (0.5, 0.5, None, 6, ["draft", "pairs", "columns", "sample"]),  # no stop: until no draft left could change the
        # majority result (4 of 4 agree, 2 left)
    ],
)
def test_the_policy_spends_calls_only_where_they_pay(
    tiny_db: Path, tiny_schemas: Path, monkeypatch: pytest.MonkeyPatch, early: float, full: float,
    stop: float | None, budget: int, ran: list[str]
) -> None:
    monkeypatch.setattr("text2sql_dspy.programs.examples.carried_pairs.encode_texts", lambda texts: np.ones((1, 1)))
    replies = [scripted_draft(GOOD_SQL, 0.9), scripted_draft(GOOD_SQL, 0.9),
               Scripted({"columns": "users.status", "sql": GOOD_SQL}, {"sql": 0.9}),
               scripted_draft(GOOD_SQL, 0.9), scripted_draft(GOOD_SQL, 0.9)]
    lm = logprob_lm(replies)
    prog = program(tiny_db, tiny_schemas, lm, stop=stop, budget=budget, early=early, full=full, carried=pool())
    answer = prog.run("How many users are suspended?")
    drafted = [s.generator for s in answer.steps if s.generator]
    assert drafted == ran and answer.metrics.lm_calls == len(ran) and answer.sql == GOOD_SQL
    assert {g: v["drafts"] for g, v in answer.metrics.by_generator.items()} == {g: ran.count(g) for g in set(ran)}
    chosen = answer.chosen
    assert chosen is not None and chosen.generator == "draft" and chosen.generators == list(dict.fromkeys(ran))


def test_agreement_across_generators_is_a_feature() -> None:
    found = generated_features(["draft", "pairs"], ["draft", "pairs", "columns", "sample"])
    assert found["generators agree"] == 0.5 and found["by: pairs"] == 1.0 and found["by: columns"] == 0.0
    assert generated_features(["redraft"], [])["generators agree"] == 0.0


def test_a_readings_generator_reaches_every_surface(tiny_db: Path, tiny_schemas: Path, capsys) -> None:
    from types import SimpleNamespace

    from text2sql_dspy.programs.web.answer import build_answer
    from text2sql_dspy.programs.web.pages import render

    lm = logprob_lm([scripted_draft(ALL_USERS, 0.9), scripted_draft(GOOD_SQL, 0.9), Scripted(
        {"columns": "users.status", "sql": GOOD_SQL}, {"sql": 0.9})])
    prog = program(tiny_db, tiny_schemas, lm, order=("draft", "sample", "columns"), budget=3, stop=None)
    answer = prog.run("How many users are suspended?")
    dumped = json.loads(answer.model_dump_json())
    by_sql = {r["sql"]: r for r in dumped["readings"]}
    assert by_sql[ALL_USERS]["generator"] == "draft" and by_sql[GOOD_SQL]["generator"] == "sample"
    assert by_sql[GOOD_SQL]["generators"] == ["sample", "columns"]
    assert [s["generator"] for s in dumped["steps"] if s["generator"]] == ["draft", "sample", "columns"]
    html = render("_answer.html", answer=build_answer("tiny", "v2", answer, prog.source()), job=SimpleNamespace(id="j"))
    assert "by <span class=\"generator\">sample, columns</span>" in html and "<p class=\"tool\">columns" in html


def test_another_model_is_a_further_generator_under_its_own_name(tiny_db: Path, tiny_schemas: Path) -> None:
    main, other = logprob_lm([scripted_draft(ALL_USERS, 0.9)]), logprob_lm([scripted_draft(GOOD_SQL, 0.9)])
    prog = program(tiny_db, tiny_schemas, main, order=("draft",), budget=1, stop=None,
                   generator_models={"claude": other})
    answer = prog.run("How many users are suspended?")
    assert [s.generator for s in answer.steps if s.generator] == ["draft", "claude"]
    assert len(main.engine.requests) == 1 and len(other.engine.requests) == 1
    by_sql = {r.sql: r for r in answer.readings}
    assert by_sql[GOOD_SQL].generator == "claude" and by_sql[ALL_USERS].generator == "draft"
    with pytest.raises(ConfigurationError, match="taken"):
        program(tiny_db, tiny_schemas, main, generator_models={"pairs": other})
