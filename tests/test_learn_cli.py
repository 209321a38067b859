"""``text2sql learn``, ``text2sql examples`` and ``text2sql ask --save``, through their main functions."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from tests.fakes import BAD_SQL, GOOD_SQL, draft
from tests.tiny_db import write_spider_folder
from text2sql_dspy.cli import EXIT_USER_ERROR, main
from text2sql_dspy.programs.examples.commands import EXAMPLES, LEARN, PARTIAL_IMPORT
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.source import open_source

QUESTION = "How many users are suspended?"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "examples.sqlite"


def stored(store_path: Path, db: Path) -> list[tuple[str, str, str, str]]:
    return [(e.kind, e.question, e.sql, e.origin) for e in ExampleStore(store_path).examples(open_source(db))]


def test_learn_list_export_delete(capsys: pytest.CaptureFixture[str], tiny_db: Path, store_path: Path,
                                  tmp_path: Path) -> None:
    where = ["--db", str(tiny_db), "--examples", str(store_path)]
    assert LEARN.main([QUESTION, GOOD_SQL, *where]) == 0
    assert capsys.readouterr().out.startswith("saved pair #1 of database 'tiny' (ran read-only on sqlite: 1 row)")
    assert main(["learn", "--note", "a failed login is a login_attempts row with success = 0", *where]) == 0
    assert main(["learn", QUESTION, "SELECT count(id) FROM users WHERE status = 'suspended'", *where]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("corrected (same question, new SQL) pair #1")

    assert EXAMPLES.main(["list", *where]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].startswith("2 example(s) of database 'tiny' (key tiny-")
    assert listing[1:] == [
        f"#1 [user] {QUESTION}", "    SELECT count(id) FROM users WHERE status = 'suspended'",
        "#2 [user] note: a failed login is a login_attempts row with success = 0",
    ]
    assert main(["examples", "list", "--json", "--kind", "note", *where]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)] == [2]

    out = tmp_path / "mine.json"
    assert main(["examples", "export", str(out), *where]) == 0
    assert [(e["kind"], e["origin"]) for e in json.loads(out.read_text())] == [("pair", "user"), ("note", "user")]
    assert main(["examples", "delete", "1", *where]) == 0
    assert [kind for kind, *_ in stored(store_path, tiny_db)] == ["note"]
    assert main(["learn", "--file", str(out), *where]) == 0
    assert "added 1, merged 0, already stored 1, refused 0" in capsys.readouterr().out
    assert len(stored(store_path, tiny_db)) == 2


def test_a_file_with_refused_rows_lists_them_and_exits_1(
    capsys: pytest.CaptureFixture[str], tiny_db: Path, store_path: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f'question,sql\n"{QUESTION}","{GOOD_SQL}"\n"Who is blocked?","{BAD_SQL}"\n')
    assert main(["learn", "--file", str(pairs), "--db", str(tiny_db), "--examples", str(store_path)]) == PARTIAL_IMPORT
    out = capsys.readouterr().out
    assert ("refused 'Who is blocked?': pair refused, the SQL is invalid for database 'tiny': unknown column 'state'"
            in out)
    assert "added 1, merged 0, already stored 0, refused 1" in out
    assert stored(store_path, tiny_db) == [("pair", QUESTION, GOOD_SQL, "import")]


def test_learn_a_split(capsys: pytest.CaptureFixture[str], tiny_db: Path, store_path: Path, tmp_path: Path) -> None:
    folder = write_spider_folder(tmp_path / "spider", tiny_db, {"train": [(QUESTION, GOOD_SQL)]})
    assert main(["learn", "--split", "train", "--data", str(folder), "--examples", str(store_path)]) == 0
    assert "added 1, merged 0, already stored 0, refused 0 (database tiny;" in capsys.readouterr().out
    assert stored(store_path, folder / "database" / "tiny" / "tiny.sqlite") == [("pair", QUESTION, GOOD_SQL, "train")]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["learn"], 'give one thing to learn: "QUESTION" "SQL", --note TEXT, --file PATH or --split NAME.'),
        (["learn", QUESTION, GOOD_SQL, "--note", "x"], "not pair and note"),
        (["learn", QUESTION], 'a pair is a question and its SQL, each quoted: text2sql learn "QUESTION" "SQL".'),
        (["learn", "", GOOD_SQL], "pair refused: the question is empty"),
        (["learn", QUESTION, "DELETE FROM users"], "the SQL is not a read: dangerous operation: DELETE"),
        (["learn", QUESTION, BAD_SQL], "unknown column 'state' (did you mean: status?"),
        (["learn", "--note", ""], "note refused: it is empty"),
        (["learn", "--file", "/nonexistent/pairs.json"], "file not found: /nonexistent/pairs.json"),
        (["learn", "--split", "nosuch", "--data", "{data}"], "no split 'nosuch' in"),
        (["learn", "--split", "train", "--db", "{db}"], "--split takes no --db or --schema"),
        (["examples", "delete", "7"], "database 'tiny' has no example #7"),
        (["examples", "list", "--examples", "{db}"], "is a SQLite database but not an example store"),
        (["learn", QUESTION, GOOD_SQL, "--db", "/nonexistent/x.sqlite"], "database file not found"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tiny_db: Path, store_path: Path, tmp_path: Path, argv: list[str], needle: str
) -> None:
    folder = write_spider_folder(tmp_path / "spider", tiny_db, {"train": [(QUESTION, GOOD_SQL)]})
    argv = [a.format(db=tiny_db, data=folder) for a in argv]
    if "--split" not in argv:
        argv += [] if "--db" in argv else ["--db", str(tiny_db)]
    argv += [] if "--examples" in argv else ["--examples", str(store_path)]
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    assert needle in err, err
    if store_path.exists():
        assert ExampleStore(store_path).keys() == {}  # nothing went in


def test_a_third_argument_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["learn", QUESTION, GOOD_SQL, "extra"])
    assert exited.value.code == EXIT_USER_ERROR and "unrecognized arguments: extra" in capsys.readouterr().err


def ask(tiny_db: Path, store_path: Path, reply: str, *extra: str) -> int:
    with dspy.context(lm=DummyLM([draft(reply)])):
        return main(["ask", QUESTION, "--db", str(tiny_db), "--program", "baseline", "--retrieval", "keyword",
                     "--save", "--examples", str(store_path), *extra])  # fmt: skip


def test_ask_save_stores_the_answer_as_confirmed(capsys: pytest.CaptureFixture[str], tiny_db: Path,
                                                 store_path: Path) -> None:
    assert ask(tiny_db, store_path, GOOD_SQL) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(GOOD_SQL)
    assert "saved pair #1 of database 'tiny'" in captured.err
    assert stored(store_path, tiny_db) == [("pair", QUESTION, GOOD_SQL, "confirmed")]
    assert ask(tiny_db, store_path, GOOD_SQL, "--json") == 0
    assert json.loads(capsys.readouterr().out)["sql"] == GOOD_SQL  # the JSON stays clean; the note goes to stderr
    assert len(stored(store_path, tiny_db)) == 1


@pytest.mark.parametrize(
    ("reply", "needle"),
    [(BAD_SQL, "unknown column 'state' (did you mean: status?"),
     ("DELETE FROM users", "not saved: no query was produced")],
)
def test_ask_save_refuses_an_answer_that_fails_the_checks(
    capsys: pytest.CaptureFixture[str], tiny_db: Path, store_path: Path, reply: str, needle: str
) -> None:
    assert ask(tiny_db, store_path, reply) == EXIT_USER_ERROR
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and needle in err
    assert stored(store_path, tiny_db) == []


def test_ask_save_with_an_unusable_store_fails_before_the_model_runs(
    capsys: pytest.CaptureFixture[str], tiny_db: Path
) -> None:
    with dspy.context(lm=DummyLM([])):  # no reply scripted: a model call would fail
        code = main(["ask", QUESTION, "--db", str(tiny_db), "--save", "--examples", str(tiny_db)])
    assert code == EXIT_USER_ERROR
    assert "is a SQLite database but not an example store" in capsys.readouterr().err


def test_ask_without_save_touches_no_store(tiny_db: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_EXAMPLES", str(store_path))
    with dspy.context(lm=DummyLM([draft(GOOD_SQL)])):
        assert main(["ask", QUESTION, "--db", str(tiny_db), "--program", "baseline", "--retrieval", "keyword"]) == 0
    assert not store_path.exists()
