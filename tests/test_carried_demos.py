"""Worked examples carried from other databases: which demos a question is shown, how a compile marks and checks
them, and that a carried demo's names never reach an answer (scripted LMs)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import dspy
import pytest

from tests.fakes import logprob_lm, scripted_draft, scripted_verdict
from text2sql_dspy.optimize.demos import compact_demos, keep_right_drafts
from text2sql_dspy.programs.agents.carried import CARRIED_LEAD, carry, is_carried, shown_demos
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.source import open_source

DOGS_SCHEMA = "-- SQLite database 'kennels'\n\nCREATE TABLE Dogs (dog_id INTEGER PRIMARY KEY, name TEXT)"
OWN = dspy.Example(question="How many users are there?", table_schemas="", hints="", sql="SELECT count(*) FROM users")
BARE = dspy.Example(question="How many dogs are there?", table_schemas=DOGS_SCHEMA, hints="",
                    sql="SELECT count(dog_id) FROM Dogs")
NO_SCHEMA = dspy.Example(question="How many dogs are there?", table_schemas="", hints="",
                         sql="SELECT count(dog_id) FROM Dogs")

# (demo, shown on the tiny database?)
SHOWN_CASES = [
    pytest.param(OWN, True, id="over this database, bare"),
    pytest.param(BARE, False, id="over another database, bare"),
    pytest.param(carry(BARE), True, id="over another database, carried"),
    pytest.param(carry(NO_SCHEMA), False, id="carried without a schema: nothing to carry"),
]


@pytest.mark.parametrize(("demo", "shown"), SHOWN_CASES)
def test_which_demos_a_question_is_shown(tiny_db: Path, demo: dspy.Example, shown: bool) -> None:
    assert (shown_demos([demo], open_source(tiny_db)) == [demo]) is shown
    assert shown_demos([demo], None) == [demo], "with no database known, every demo is shown"


def test_carrying_marks_the_schema_once_and_keeps_the_rest() -> None:
    carried = carry(BARE)
    assert is_carried(carried) and not is_carried(BARE)
    assert carried.table_schemas == f"{CARRIED_LEAD}\n{DOGS_SCHEMA}"
    assert carry(carried).table_schemas == carried.table_schemas
    assert (carried.question, carried.sql) == (BARE.question, BARE.sql)
    assert carry(NO_SCHEMA) is NO_SCHEMA


def test_a_compile_drops_wrong_drafts_and_carries_the_rest(tiny_db: Path) -> None:
    program = make_program("v2", db_path=tiny_db, retrieval_type="keyword")
    schema = "-- SQLite database 'tiny'\n\nCREATE TABLE users (id INTEGER)"
    right = dspy.Example(question="How many users?", table_schemas=schema, hints="", sql="SELECT count(*) FROM users")
    wrong = dspy.Example(question="How many users are suspended?", table_schemas=schema, hints="",
                         sql="SELECT count(*) FROM users")  # a sample drawn on the way: the filter is missing
    program.draft.demos = [right, wrong]
    examples = [dspy.Example(question=q, gold_sql=g, db_path=str(tiny_db)) for q, g in [
        ("How many users?", "SELECT count(*) FROM users"),
        ("How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'"),
    ]]
    assert keep_right_drafts(program, examples) == 1
    counts = compact_demos(program, carried=True)
    assert counts["draft"] == 1 and [d.question for d in program.draft.demos] == ["How many users?"]
    assert is_carried(program.draft.demos[0])


def test_a_carried_demos_names_never_reach_the_answer(tiny_db: Path) -> None:
    """The model copies the worked example's table; the validator finds it unknown and the redraft is the answer."""
    question = "How many users are suspended?"
    good = "SELECT count(*) FROM users WHERE status = 'suspended'"
    lm = logprob_lm({
        "[[ ## sql_query ## ]]": scripted_verdict(0.9),
        "unknown table 'Dogs'": scripted_draft(good, 0.9),  # the redraft, told of the unknown table
        question: scripted_draft("SELECT count(dog_id) FROM Dogs", 0.9),  # the first draft copies the demo
    })
    program = make_program("v2", db_path=tiny_db, retrieval_type="keyword")
    program.draft.demos = [carry(BARE)]
    with dspy.context(lm=lm):
        answer = program(question=question).answer
    drafting = [str(r.messages) for r in lm.engine.requests if "[[ ## sql_query ## ]]" not in str(r.messages)]
    assert drafting and all(CARRIED_LEAD in p and "CREATE TABLE Dogs" in p for p in drafting), \
        "the carried demo is shown under its own schema and its mark"
    assert answer.sql == good and "dogs" not in answer.sql.lower()
    assert all("dogs" not in (r.sql or "").lower() for r in answer.readings if r.chosen)


# (query, the shapes it shows)
SHAPE_CASES = [
    ("SELECT count(*) FROM users", {"count"}),
    ("SELECT name FROM users WHERE id NOT IN (SELECT user_id FROM blocks)", {"filter", "negation", "nested"}),
    ("SELECT o.name, count(DISTINCT u.id) FROM organizations AS o JOIN users AS u ON u.org_id = o.id "
     "GROUP BY o.name HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 1",
     {"join", "group", "having", "order", "limit", "count", "distinct"}),
    ("SELECT email FROM users UNION SELECT name FROM organizations", {"set operation"}),
    ("SELECT sum(CASE WHEN status = 'active' THEN 1 ELSE 0 END) FROM users", {"sum", "case"}),
    ("not sql at all (", set()),
]


@pytest.mark.parametrize(("sql", "shapes"), SHAPE_CASES)
def test_the_shapes_a_query_shows(sql: str, shapes: set[str]) -> None:
    from text2sql_dspy.optimize.demos import sql_shapes

    assert sql_shapes(sql) == shapes


def test_the_demos_kept_are_the_most_varied(tiny_db: Path) -> None:
    from text2sql_dspy.optimize.demos import varied_drafts

    program = make_program("v2", db_path=tiny_db, retrieval_type="keyword")
    queries = ["SELECT count(*) FROM users", "SELECT count(*) FROM blocks",
               "SELECT name FROM organizations ORDER BY name LIMIT 3",
               "SELECT org_id, count(*) FROM users GROUP BY org_id"]
    program.draft.demos = [dspy.Example(question=f"q{i}", sql=sql) for i, sql in enumerate(queries)]
    varied_drafts(program, 3)
    # order+limit and group+count add two shapes each (the earlier first); then nothing is new, and the first is kept
    assert [d.question for d in program.draft.demos] == ["q2", "q3", "q0"]


def test_the_most_varied_training_questions_come_first() -> None:
    from text2sql_dspy.optimize.demos import varied_first

    examples = [dspy.Example(question=q, gold_sql=g) for q, g in [
        ("lookup", "SELECT name FROM users"),
        ("counted", "SELECT count(*) FROM users WHERE status = 'active'"),
        ("no gold", ""),
        ("grouped", "SELECT org_id, count(*) FROM users WHERE status = 'active' GROUP BY org_id"),
        ("also counted", "SELECT count(*) FROM blocks WHERE user_id = 1"),
    ]]
    assert [ex.question for ex in varied_first(examples)] == ["grouped", "counted", "also counted", "lookup", "no gold"]


def test_a_compile_with_carried_demos_shows_them_on_another_database(tmp_path: Path, tiny_db: Path) -> None:
    from tests.test_optimize import DEV, JUDGE_KEY, TRAIN, compile_folder, scripted
    from text2sql_dspy.optimize.compile_command import main as optimize_main
    from text2sql_dspy.programs.agents.registry import metadata_path

    data, out = compile_folder(tmp_path, tiny_db), tmp_path / "carried.json"
    argv = ["--program", "v2", "--optimizer", "bootstrap", "--metric", "execution", "--data", str(data),
            "--out", str(out), "--retrieval", "keyword", "--train-limit", "3", "--dev-limit", "0", "--max-demos", "3",
            "--keep-demos", "2", "--varied-first", "--carry-demos", "--no-learn"]
    with dspy.context(lm=scripted(TRAIN + DEV)):
        assert optimize_main(argv) == 0
    meta = json.loads(metadata_path(out).read_text())
    assert meta["carried_demos"] is True and meta["wrong_demos_dropped"] == 0 and meta["demos"]["draft"] == 2
    assert meta["budget"]["keep_demos"] == 2 and meta["budget"]["varied_first"] is True
    demos = json.loads(out.read_text())["draft"]["demos"]
    assert all(d["table_schemas"].startswith(CARRIED_LEAD) and "logprobs" not in d for d in demos)

    other = tmp_path / "other.sqlite"  # a database with none of the demos' tables
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, kind TEXT)")
        conn.execute("INSERT INTO pets VALUES (1, 'cat')")
    program = make_program(str(out), db_path=other, retrieval_type="keyword")
    lm = logprob_lm({JUDGE_KEY: scripted_verdict(0.9),
                     "How many pets": scripted_draft("SELECT count(*) FROM pets", 0.9)})
    with dspy.context(lm=lm):
        assert program(question="How many pets are there?").answer.sql == "SELECT count(*) FROM pets"
    prompt = str(lm.engine.requests[0].messages)
    assert all(d["question"] in prompt for d in demos) and prompt.count(CARRIED_LEAD) == 2

