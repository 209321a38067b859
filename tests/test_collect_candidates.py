"""The verifier's training data (optimize/collect.py): every reading V2 could weigh drawn, judged and
scored against the gold query; conversations answered turn by turn on the program's own answers; a rerun resumes;
``--per-database`` caps each database's questions. The program runs on a scripted LM."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import dspy
import pytest

from tests.fakes import GOOD_SQL, LogprobEngine, Scripted, logprob_lm, scripted_draft, scripted_verdict
from text2sql_dspy.optimize import collect as collector  # noqa: E402
from text2sql_dspy.optimize import fit_verifier as fit  # noqa: E402
from text2sql_dspy.programs.llm.fields import field_marker

ALL_USERS = "SELECT count(*) FROM users"
ACTIVE = "SELECT count(*) FROM users WHERE status = 'active'"
EMAILS = "SELECT email FROM users"
SUSPENDED = "How many users are suspended?"
LIST_EMAILS = "List the emails of all users."


class Routed(LogprobEngine):
    """Replies by what is asked: a draft (``DraftSQL``) or an edit (``EditSQL``) from its question's own queue, a
    stand-alone rewrite by its follow-up, a verdict by its query. Every call is kept in :attr:`calls` as
    ``(kind, question or query)``; a call with no reply scripted for it raises."""

    def __init__(self, drafts: dict[str, list[Scripted]] | None = None, edits: dict[str, list[Scripted]] | None = None,
                 rewrites: dict[str, str] | None = None, verdicts: dict[str, float] | None = None):
        super().__init__([])
        self.queues = {**{("draft", q): list(r) for q, r in (drafts or {}).items()},
                       **{("edit", q): list(r) for q, r in (edits or {}).items()}}
        self.rewrites = rewrites or {}
        self.verdicts = verdicts or {}
        self.calls: list[tuple[str, str]] = []
        self.prompts: list[str] = []

    def _next(self, request: Any) -> Scripted:
        text = "\n".join(part.text for m in request.messages for part in m.parts if hasattr(part, "text"))
        self.prompts.append(text)
        if field_marker("follow_up") in text:
            follow_up = value_of(text, "follow_up")
            self.calls.append(("rewrite", follow_up))
            return Scripted({"question": self.rewrites[follow_up]})
        if field_marker("sql_query") in text:
            sql = value_of(text, "sql_query")
            self.calls.append(("judge", sql))
            return scripted_verdict(self.verdicts.get(sql, 0.5))
        kind = "edit" if field_marker("previous_sql") in text else "draft"
        question = value_of(text, "question")
        self.calls.append((kind, question))
        queue = self.queues.get((kind, question))
        if not queue:
            raise RuntimeError(f"Routed: no {kind} scripted for {question!r}")
        return queue.pop(0)

    def asked(self, kind: str, about: str) -> int:
        return self.calls.count((kind, about))


def value_of(text: str, name: str) -> str:
    """The value of field ``name`` as the prompt's last occurrence of its marker gives it."""
    return text.rsplit(field_marker(name) + "\n", 1)[-1].split("\n\n[[ ## ", 1)[0].strip()


def scripted(engine: Routed) -> Any:
    """The collector's program on an LM over ``engine`` (an ``openai/`` model: it returns token probabilities)."""
    return collector.build_program(dspy.LM("openai/scripted-logprobs", engine=engine, cache=False, num_retries=0))


def spider_folder(root: Path, tiny_db: Path, questions: list[tuple[str, str, str]]) -> Path:
    """A Spider-format folder: ``train.json`` of ``(db_id, question, gold)``, each database a copy of the tiny one."""
    for db_id in {db for db, _, _ in questions} | {"tiny"}:
        (root / "database" / db_id).mkdir(parents=True, exist_ok=True)
        shutil.copy(tiny_db, root / "database" / db_id / f"{db_id}.sqlite")
    (root / "train.json").write_text(json.dumps([{"db_id": d, "question": q, "query": s} for d, q, s in questions]))
    return root


def records(out: Path) -> list[dict]:
    """The collected lines, read as the verifier's fit reads them."""
    return [json.loads(line) for line in fit.lines(out)]


def by_sql(record: dict) -> dict[str, tuple[bool, float | None]]:
    """Each reading's query -> (whether it is right, its verdict)."""
    readings = record["answer"]["readings"]
    return {r["sql"]: (ok, r["judge_score"]) for r, ok in zip(readings, record["readings_correct"], strict=True)}


@pytest.mark.shipped_verifier
def test_the_program_draws_every_sample_and_judges_every_group_whatever_the_shipped_verifier() -> None:
    program = collector.build_program(logprob_lm([]))
    assert program.verifier is None and program.sample_below > 1.0
    assert program.limits.max_judge_calls - 1 >= program.candidates  # a verdict for every group, one for a redraft


def test_every_reading_is_drawn_judged_and_scored(tiny_db: Path, tmp_path: Path) -> None:
    data = spider_folder(tmp_path / "spider", tiny_db, [("tiny", SUSPENDED, GOOD_SQL), ("tiny", LIST_EMAILS, EMAILS)])
    engine = Routed(
        drafts={SUSPENDED: [scripted_draft(GOOD_SQL, 0.95), scripted_draft(ALL_USERS, 0.6),
                            scripted_draft(GOOD_SQL, 0.9)],
                LIST_EMAILS: [scripted_draft(EMAILS, 0.95), scripted_draft(EMAILS, 0.9)]},
        verdicts={GOOD_SQL: 0.9, ALL_USERS: 0.2, EMAILS: 0.8})
    out = tmp_path / "out" / "train.jsonl.gz"
    assert collector.main(["--data", str(data), "--split", "train", "--out", str(out)], program=scripted(engine)) == 0
    first, second = records(out)
    assert (first["index"], first["db_id"], first["gold"], first["scoring"]) == (0, "tiny", GOOD_SQL, "spider")
    # a sure first draft (0.95) still draws both samples; the two results are each judged and scored by execution
    assert first["answer"]["drafts"] == 3 and engine.asked("draft", SUSPENDED) == 3
    assert by_sql(first) == {GOOD_SQL: (True, pytest.approx(0.9)), ALL_USERS: (False, pytest.approx(0.2))}
    assert first["correct"] is True and first["answer"]["sql"] == GOOD_SQL
    # drafts that agree: sampling stops once the majority is settled, as V2's does; the one reading is judged
    assert second["answer"]["drafts"] == 2 and by_sql(second) == {EMAILS: (True, pytest.approx(0.8))}
    assert "interaction" not in first and "error" not in first
    with gzip.open(out, "rt") as fh:
        assert len(fh.read().splitlines()) == 2
    assert [len(q["full"]) for q in fit.examples([out], [data])] == [2, 1]  # the fit reads each judged group


def test_a_rerun_resumes_with_no_call_for_what_is_done(tiny_db: Path, tmp_path: Path) -> None:
    data = spider_folder(tmp_path / "spider", tiny_db, [("tiny", SUSPENDED, GOOD_SQL), ("tiny", LIST_EMAILS, EMAILS)])
    out = tmp_path / "train.jsonl.gz"
    argv = ["--data", str(data), "--split", "train", "--out", str(out)]
    engine = Routed(drafts={SUSPENDED: [scripted_draft(ALL_USERS, 0.9)] * 3,
                            LIST_EMAILS: [scripted_draft(EMAILS, 0.9)] * 3})
    collector.main(argv, program=scripted(engine))
    kept = records(out)
    collector.write_records(out, {0: kept[0]})  # the run was killed while writing the second line
    with out.open("ab") as fh:
        fh.write(gzip.compress((json.dumps(kept[1]) + "\n").encode())[:40])
    again = Routed(drafts={LIST_EMAILS: [scripted_draft(EMAILS, 0.9)] * 3})
    collector.main(argv, program=scripted(again))
    assert [r["index"] for r in records(out)] == [0, 1]
    assert {question for _, question in again.calls if question in (SUSPENDED, LIST_EMAILS)} == {LIST_EMAILS}
    idle = Routed()
    collector.main(argv, program=scripted(idle))
    assert idle.calls == [] and [r["index"] for r in records(out)] == [0, 1]


def test_a_conversation_is_answered_turn_by_turn_on_the_programs_own_answers(
        tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spider = spider_folder(tmp_path / "spider", tiny_db, [])
    cosql = tmp_path / "cosql"
    cosql.mkdir()
    follow_up = "Only the suspended ones?"
    (cosql / "train.json").write_text(json.dumps([
        {"database_id": "tiny", "interaction": [{"utterance": "How many users are there?", "query": ALL_USERS},
                                                {"utterance": follow_up, "query": GOOD_SQL}]},
        {"database_id": "tiny", "interaction": [{"utterance": LIST_EMAILS, "query": EMAILS}]},
    ]))
    out = tmp_path / "cosql.jsonl"
    argv = ["--data", str(cosql), "--split", "train", "--databases", str(spider), "--per-database", "1", "--out",
            str(out)]
    first = Routed(drafts={"How many users are there?": [scripted_draft(ALL_USERS, 0.95)] * 2})
    assert collector.main([*argv, "--limit", "1"], program=scripted(first)) == 0  # the first turn alone
    second = Routed(edits={follow_up: [scripted_draft(GOOD_SQL, 0.9), scripted_draft(GOOD_SQL, 0.8)]},
                    rewrites={follow_up: SUSPENDED}, drafts={SUSPENDED: [scripted_draft(ACTIVE, 0.7)]},
                    verdicts={GOOD_SQL: 0.9, ACTIVE: 0.3})
    assert collector.main(argv, program=scripted(second)) == 0
    assert "2 turns of 1 conversations over 1 databases; 1 done before, 1 to do" in capsys.readouterr().out
    turns = records(out)
    assert [(r["index"], r["interaction"], r["turn"]) for r in turns] == [(0, 0, 0), (1, 0, 1)]  # --per-database 1
    assert all(question != "How many users are there?" for _, question in second.calls)  # the kept turn: no call
    edit = next(p for p, (kind, _) in zip(second.prompts, second.calls, strict=True) if kind == "edit")
    assert value_of(edit, "previous_sql") == ALL_USERS  # the first turn's answer, as the run before kept it
    follow = turns[1]
    assert follow["history_turns"] == 1 and second.asked("rewrite", follow_up) == 1
    assert [s["kind"] for s in follow["answer"]["steps"] if s["kind"] in ("draft", "rewrite", "standalone")] == \
        ["draft", "rewrite", "standalone"]
    assert by_sql(follow) == {GOOD_SQL: (True, pytest.approx(0.9)), ACTIVE: (False, pytest.approx(0.3))}


def test_per_database_keeps_the_first_questions_of_each_database(
        tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    questions = [("tiny", "How many users are there?", ALL_USERS), ("other", "How many users exist?", ALL_USERS),
                 ("tiny", "Count the users.", ALL_USERS), ("tiny", "Number of users?", ALL_USERS)]
    data = spider_folder(tmp_path / "spider", tiny_db, questions)
    engine = Routed(drafts={q: [scripted_draft(ALL_USERS, 0.9)] * 2 for _, q, _ in questions})
    out = tmp_path / "train.jsonl"
    collector.main(["--data", str(data), "--split", "train", "--per-database", "2", "--out", str(out)],
                   program=scripted(engine))
    assert "3 questions over 2 databases" in capsys.readouterr().out
    assert [(r["index"], r["db_id"]) for r in records(out)] == [(0, "tiny"), (1, "other"), (2, "tiny")]
    assert engine.asked("draft", "Number of users?") == 0


class Broken:
    """A program whose every run raises."""

    def run(self, question: str, db_path: Any = None, hint: str = "", history: Any = None) -> Any:
        raise ValueError("the program broke")


def test_a_question_whose_run_raises_is_recorded_with_its_error(tiny_db: Path, tmp_path: Path) -> None:
    data = spider_folder(tmp_path / "spider", tiny_db, [("tiny", SUSPENDED, GOOD_SQL)])
    out = tmp_path / "train.jsonl"
    assert collector.main(["--data", str(data), "--split", "train", "--out", str(out)], program=Broken()) == 0
    (line,) = records(out)
    assert line["error"] == "ValueError: the program broke" and line["correct"] is False
    assert line["answer"]["status"] == "failed" and line["readings_correct"] == []
    assert [q["full"] for q in fit.examples([out], [data])] == [[]]  # the fit reads it, and learns nothing from it


def test_shuffled_keeps_each_databases_first_in_a_fixed_order_and_more_keeps_those() -> None:
    import dspy

    examples = [dspy.Example(db_id=db, question=f"q{i}") for i, db in enumerate(["a"] * 20 + ["b"] * 20)]
    one, three = (collector.selected(examples, n, shuffled=True) for n in (1, 3))
    for chosen, n in ((one, 1), (three, 3)):
        assert sorted(e.db_id for _, e in chosen) == ["a"] * n + ["b"] * n
    assert {i for i, _ in one} < {i for i, _ in three}  # nested: a rerun with more resumes
    assert collector.selected(examples, 3, shuffled=True) == three  # fixed
    assert {i for i, _ in three} != {0, 1, 2, 20, 21, 22}  # not the split's first
    assert [i for i, _ in collector.selected(examples, 2)] == [0, 1, 20, 21]
