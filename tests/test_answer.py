"""The typed answer (programs/answer.py) as ``run()`` returns it: status, readings with their votes, verdicts and
previews from the program's own checks, steps and metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import BAD_SQL, GOOD_SQL, draft, logprob_lm, scripted_draft, scripted_verdict
from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.agents.react import ReActAgent, ReActAgentV2
from text2sql_dspy.programs.answer import Answer, Preview, Status
from text2sql_dspy.programs.db.database import QueryResult

ALL_USERS = "SELECT count(*) FROM users"


def make(cls: type, tiny_db: Path, tiny_schemas: Path, lm: object, **kwargs: object) -> object:
    return cls(tiny_db, schema_path=tiny_schemas, retrieval_type="keyword", lm=lm, **kwargs)


def test_v2_answer_carries_every_reading_with_its_votes_verdict_and_rows(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.6), scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6),
                     scripted_verdict(0.8), scripted_verdict(0.2)])
    answer = make(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert isinstance(answer, Answer) and answer.status is Status.ANSWERED and answer.sql == GOOD_SQL
    assert answer.drafts == 3 and answer.agreement == pytest.approx(2 / 3)
    chosen, other = answer.readings
    assert (chosen.sql, chosen.chosen, chosen.votes, chosen.judge_score) == (GOOD_SQL, True, 2, pytest.approx(0.8))
    assert (other.sql, other.chosen, other.votes, other.judge_score) == (ALL_USERS, False, 1, pytest.approx(0.2))
    assert chosen.preview == Preview(columns=["count(*)"], rows=[[1]], row_count=1)  # the rows the judge was shown
    assert other.preview.rows == [[3]]
    assert answer.steps[-1].kind == "choose" and answer.metrics.lm_calls == 5
    assert Answer.model_validate_json(answer.model_dump_json()) == answer  # what --json and the API send


def test_an_answer_with_no_valid_query_failed_and_says_why(tiny_db: Path, tiny_schemas: Path) -> None:
    answer = make(ReActAgent, tiny_db, tiny_schemas, DummyLM([draft(BAD_SQL)] * 2), max_repair_steps=0).run("Who?")
    assert answer.status is Status.FAILED and answer.sql == "" and answer.confidence == 0.0 and not answer.valid
    assert answer.reason.startswith("no query passed the validator (unknown column")
    assert [(r.sql, r.valid, r.preview) for r in answer.readings] == [(BAD_SQL, False, None)]  # never run


def test_a_write_is_refused(tiny_db: Path, tiny_schemas: Path) -> None:
    answer = make(Baseline, tiny_db, tiny_schemas, DummyLM([draft("DROP TABLE users")])).run("Drop the users")
    assert answer.status is Status.REFUSED and answer.sql == "" and "not a read-only query" in answer.reason


def test_a_preview_keeps_the_first_rows_as_json_and_an_error_alone() -> None:
    import datetime as dt
    from decimal import Decimal

    rows = [(i, Decimal("1.5"), dt.date(2025, 1, i + 1)) for i in range(8)]
    preview = Preview.of(QueryResult(columns=["a", "b", "c"], rows=rows, truncated=True))
    assert preview.rows[0] == [0, 1.5, "2025-01-01"] and len(preview.rows) == 5
    assert preview.row_count == 8 and preview.truncated
    assert Preview.of(QueryResult(error="no such table: x")) == Preview(error="no such table: x")


SAME_ROWS = "SELECT count(id) FROM users"  # returns what ALL_USERS returns: one result, two votes


def unsure_lm() -> object:
    """Two result groups the checks support about equally: 2 votes and P(True) 0.4 against 1 vote and 0.7."""
    return logprob_lm([scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6), scripted_draft(SAME_ROWS, 0.6),
                       scripted_verdict(0.4), scripted_verdict(0.7)])


def test_an_answer_the_checks_cannot_decide_is_unsure_and_carries_both_readings(tiny_db: Path,
                                                                                 tiny_schemas: Path) -> None:
    answer = make(ReActAgentV2, tiny_db, tiny_schemas, unsure_lm()).run("How many users are suspended?")
    assert answer.status is Status.UNSURE and answer.sql == ALL_USERS  # the better supported one stays the answer
    first, second = answer.alternatives
    assert (first.sql, first.votes, first.preview.rows) == (ALL_USERS, 2, [[3]])
    assert (second.sql, second.votes, second.preview.rows) == (GOOD_SQL, 1, [[1]])
    assert first.difference == [] and second.difference == ["keeps rows where status = 'suspended'"]


def test_a_clear_choice_is_answered_with_no_alternatives(tiny_db: Path, tiny_schemas: Path) -> None:
    lm = logprob_lm([scripted_draft(ALL_USERS, 0.6), scripted_draft(GOOD_SQL, 0.6), scripted_draft(SAME_ROWS, 0.6),
                     scripted_verdict(0.1), scripted_verdict(0.95)])  # a sure judge overrules the majority
    answer = make(ReActAgentV2, tiny_db, tiny_schemas, lm).run("How many users are suspended?")
    assert answer.status is Status.ANSWERED and answer.sql == GOOD_SQL and answer.alternatives == []


def test_ask_prints_both_readings_and_pick_stores_the_one_chosen(tiny_db: Path, tiny_schemas: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import dspy

    from text2sql_dspy.cli import main
    from text2sql_dspy.programs.examples.store import ExampleStore
    from text2sql_dspy.programs.source import open_source

    store = tmp_path / "examples.sqlite"
    argv = ["ask", "How many users are suspended?", "--db", str(tiny_db), "--schema", str(tiny_schemas),
            "--retrieval", "keyword", "--examples", str(store)]
    with dspy.context(lm=unsure_lm()):
        assert main(argv) == 0  # no terminal, no --pick: reading 1 is kept, nothing stored
    out = capsys.readouterr()
    assert out.out.splitlines()[0] == ALL_USERS
    assert "Which did you mean?" in out.err and f"[1] {ALL_USERS}" in out.err and f"[2] {GOOD_SQL}" in out.err
    assert "keeps rows where status = 'suspended'" in out.err
    assert ExampleStore(store).examples(open_source(tiny_db, tiny_schemas), kind="pair") == []
    with dspy.context(lm=unsure_lm()):
        assert main([*argv, "--pick", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == GOOD_SQL
    pairs = ExampleStore(store).examples(open_source(tiny_db, tiny_schemas), kind="pair")
    assert [(p.question, p.sql) for p in pairs] == [("How many users are suspended?", GOOD_SQL)]
    with dspy.context(lm=unsure_lm()), pytest.raises(SystemExit, match="has 2 readings"):
        main([*argv, "--pick", "3"])
