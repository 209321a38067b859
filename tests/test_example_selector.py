"""Stored pairs shown to the drafting step: which ones, where in the prompt, and through compile and make_program."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import GOOD_SQL, draft
from tests.tiny_db import write_spider_folder
from text2sql_dspy.optimize.compile_command import main as compile_main
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.agents.registry import make_program, metadata_path
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.selector import (
    PAIRS_GUIDE,
    PAIRS_HEADER,
    ExampleSelector,
    mask_question,
    render_pairs,
    with_notes,
)
from text2sql_dspy.programs.examples.store import ExampleStore, StoredExample
from text2sql_dspy.programs.source import open_source

PAIRS = [
    ("How many organizations are there?", "SELECT count(*) FROM organizations"),
    ("Which users never logged in?", "SELECT full_name FROM users WHERE last_login_at IS NULL"),
    ("How many users are blocked?", "SELECT count(DISTINCT user_id) FROM blocks WHERE unblocked_at IS NULL"),
    ("How many failed logins are there?", "SELECT count(*) FROM login_attempts WHERE success = 0"),
]


@pytest.fixture()
def store(tmp_path: Path, tiny_db: Path, tiny_schemas: Path) -> ExampleStore:
    store = ExampleStore(tmp_path / "examples.sqlite")
    source = open_source(tiny_db, tiny_schemas)
    for question, sql in PAIRS:
        store.add_pair(source, question, sql)
    store.add_note(source, "A failed login is a login_attempts row with success = 0.")
    return store


def test_the_nearest_pairs_of_the_same_database_come_first(store: ExampleStore, tiny_db: Path,
                                                           tiny_schemas: Path) -> None:
    source = open_source(tiny_db, tiny_schemas)
    pairs = ExampleSelector(store, k=2).pairs(source, "How many failed login attempts did users make?")
    assert len(pairs) == 2
    assert pairs[0].question == "How many failed logins are there?"
    assert pairs[0].sql == "SELECT count(*) FROM login_attempts WHERE success = 0"


def _pair(question: str, sql: str) -> StoredExample:
    return StoredExample(id=0, db_key="d", kind="pair", question=question, sql=sql, origin="test", created="")


NEAR, MID, FAR = (_pair(f"Question {n}?", f"SELECT {n} FROM t") for n in ("one", "two", "three"))
LONG = _pair("Long?", "SELECT " + ", ".join(f"column_{i}" for i in range(200)) + " FROM t")


@pytest.mark.parametrize(
    ("pairs", "budget", "shown"),
    [
        ([], 1000, []),
        ([NEAR, MID, FAR], 1000, [FAR, MID, NEAR]),  # all fit: the nearest last, next to the question
        ([NEAR, MID, FAR], 50, [MID, NEAR]),  # the least similar is dropped first
        ([NEAR, MID, FAR], 0, [NEAR]),  # the nearest is shown even when nothing fits
        ([LONG, NEAR], 100, [LONG]),
    ],
)
def test_pairs_are_rendered_within_the_budget(pairs: list[StoredExample], budget: int,
                                              shown: list[StoredExample]) -> None:
    text = render_pairs(pairs, budget)
    expected = [PAIRS_HEADER, *(f"Question: {p.question}\nSQL: {p.sql}" for p in shown)] if shown else []
    assert text == "\n\n".join(expected)


def test_a_question_is_never_shown_its_own_pair_when_scoring_stored_questions(
    store: ExampleStore, tiny_db: Path, tiny_schemas: Path
) -> None:
    source = open_source(tiny_db, tiny_schemas)
    asked = "How many users are blocked?"
    assert asked in [d.question for d in ExampleSelector(store, k=4).pairs(source, asked)]
    held_out = ExampleSelector(store, k=4, exclude_same_question=True).pairs(source, asked)
    assert asked not in [d.question for d in held_out] and len(held_out) == 3


def test_pairs_of_another_database_are_never_shown(store: ExampleStore, tmp_path: Path, tiny_db: Path) -> None:
    other = open_source(tiny_db)  # the same file without the schema folder: same names, so the same identity
    assert ExampleSelector(store).pairs(other, "How many organizations?")
    copy = tmp_path / "other.sqlite"
    copy.write_bytes(tiny_db.read_bytes())
    renamed = open_source(copy)  # the same tables under another db_id: another database
    assert ExampleSelector(store).pairs(renamed, "How many organizations?") == []


def test_a_new_pair_is_seen_without_rebuilding_the_selector(store: ExampleStore, tiny_db: Path,
                                                            tiny_schemas: Path) -> None:
    source = open_source(tiny_db, tiny_schemas)
    selector = ExampleSelector(store, k=1)
    best = selector.pairs(source, "Which organizations are on the Business plan?")[0]
    assert best.question != "Which organizations use Business?"
    store.add_pair(source, "Which organizations use Business?",
                   "SELECT name FROM organizations WHERE plan = 'Business'")
    best = selector.pairs(source, "Which organizations are on the Business plan?")[0]
    assert best.question == "Which organizations use Business?"


@pytest.mark.parametrize(
    ("question", "masked"),
    [
        ("How many users are blocked?", "How many <mask> are <mask>"),  # blocked_at names a column
        ("List organizations on plan 'Business'", "List <mask> on <mask> <unk>"),
        ("Users with more than 3 failed logins", "<mask> with more than <unk> failed <mask>"),
        ("What is the email of Ann Lee?", "What is the <mask> of Ann Lee?"),
    ],
)
def test_masking_hides_schema_words_and_values(question: str, masked: str, tiny_db: Path, tiny_schemas: Path) -> None:
    assert mask_question(question, open_source(tiny_db, tiny_schemas)) == masked


def test_notes_follow_the_schema_as_comments() -> None:
    assert with_notes("CREATE TABLE t (a INT);", []) == "CREATE TABLE t (a INT);"
    text = with_notes("CREATE TABLE t (a INT);", ["a failed  login is\nsuccess = 0"])
    assert text.startswith("CREATE TABLE t (a INT);\n\n-- Notes") and text.endswith("-- a failed login is success = 0")
    assert with_notes("CREATE TABLE t (a INT);", [], pairs=True) == f"CREATE TABLE t (a INT);\n\n{PAIRS_GUIDE}"
    assert with_notes("CREATE TABLE t (a INT);", ["n"], pairs=True).endswith("-- n\n\n" + PAIRS_GUIDE)


def test_the_drafting_prompt_shows_the_schema_then_the_pairs_with_the_question(
    store: ExampleStore, tiny_db: Path, tiny_schemas: Path
) -> None:
    lm = DummyLM([draft(GOOD_SQL)] * 3)
    program = ReActAgentV2(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, examples=store,
                           k_examples=2)
    program.run("How many users are suspended?")
    system, user = (m for m in lm.history[0]["messages"] if m["role"] != "assistant")  # no demo turns
    assert system["content"].startswith("[[ ## table_schemas ## ]]") and "Notes from the people" in system["content"]
    assert "A failed login is a login_attempts row" in system["content"] and PAIRS_GUIDE in system["content"]
    assert "How many users are blocked?" not in system["content"]  # the cached prefix is the same for every question
    facts, question = user["content"].split("[[ ## facts ## ]]")[1].split("[[ ## question ## ]]")
    assert PAIRS_HEADER in facts and "Question: How many users are blocked?" in facts
    assert "unblocked_at IS NULL" in facts
    assert "How many users are suspended?" in question and "How many users are blocked?" not in question


def test_compile_learns_the_training_split_and_the_compiled_program_uses_its_store(tmp_path: Path,
                                                                                   tiny_db: Path) -> None:
    data = write_spider_folder(tmp_path / "spider", tiny_db, {"train": PAIRS, "dev": []})
    out = tmp_path / "compiled" / "v2.json"
    argv = ["--program", "v2", "--optimizer", "none", "--data", str(data), "--out", str(out), "--retrieval", "keyword",
            "--dev-limit", "0", "--metric", "execution", "--k-examples", "2", "--schema-budget", "4000"]
    assert compile_main(argv) == 0
    meta = json.loads(metadata_path(out).read_text())
    assert meta["view"] == {"retrieval": "keyword", "top_k": 5, "schema_budget": 4000}  # what the prompts showed
    assert meta["examples"] == "v2.examples.sqlite" and meta["learned"] == {"added": 4, "already_stored": 0,
                                                                            "refused": 0}
    program = make_program(str(out), retrieval_type="keyword", lm=DummyLM([]))
    assert program.selector is not None and program.selector.store.path == out.with_suffix(".examples.sqlite")
    assert program.selector.k == meta["k_examples"] == 2  # compile's --k-examples holds where the file is used
    assert make_program(str(out), retrieval_type="keyword", lm=DummyLM([]), k_examples=3).selector.k == 3
    stored = sorted((e.question, e.sql) for e in program.selector.store.examples(open_source(tiny_db)))
    assert len(stored) == 4 and meta["examples_export"] == "v2.examples.json"
    assert len(json.loads(out.with_suffix(".examples.json").read_text())) == 4

    moved = tmp_path / "elsewhere"  # the compiled file travels with its export only: the store is rebuilt from it
    moved.mkdir()
    for suffix in (".json", ".meta.json", ".examples.json"):
        shutil.copy(out.with_suffix(suffix), moved / f"v2{suffix}")
    program = make_program(str(moved / "v2.json"), retrieval_type="keyword", lm=DummyLM([]))
    assert program.selector.store.path == moved / "v2.examples.sqlite"
    assert sorted((e.question, e.sql) for e in program.selector.store.examples(open_source(tiny_db))) == stored
    assert program.selector.store.restore(moved / "v2.examples.json") == 0  # restoring again adds nothing

    (moved / "v2.examples.sqlite").unlink()
    (moved / "v2.examples.json").unlink()
    with pytest.raises(ConfigurationError, match="example store .* is missing"):
        make_program(str(moved / "v2.json"), retrieval_type="keyword", lm=DummyLM([]))
