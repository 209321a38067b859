"""Which chart a result gets, and how the answer reads: pure functions, no server."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from text2sql_dspy.cli import EXIT_USER_ERROR, main
from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.verdict import VerdictInputs
from text2sql_dspy.programs.web.answer import AnswerView, pretty_sql
from text2sql_dspy.programs.web.chart import choose_chart
from text2sql_dspy.programs.web.serve_command import TOKEN_ENV


def test_a_category_and_a_number_make_a_bar_chart() -> None:
    chart = choose_chart(["plan", "users"], [("Business", 12), ("Starter", 3), (None, 1)])
    assert chart.kind == "bar"
    trace = chart.figure["data"][0]
    assert trace["type"] == "bar" and trace["x"] == ["Business", "Starter", "NULL"] and trace["y"] == [12, 3, 1]
    assert chart.figure["layout"]["xaxis"]["title"]["text"] == "plan"


def test_an_id_and_a_number_bar_by_the_id_and_text_beats_an_id() -> None:
    assert choose_chart(["user_id", "failed"], [(7, 3), (9, 1)]).figure["data"][0]["x"] == ["7", "9"]
    chart = choose_chart(["user_id", "email", "failed"], [(7, "a@x", 3), (9, "b@x", 1)])
    assert chart.figure["data"][0]["x"] == ["a@x", "b@x"] and chart.figure["data"][0]["y"] == [3, 1]


@pytest.mark.parametrize("day", ["2024-03-01", "2024-03-01 10:00:00", "2024-03", dt.date(2024, 3, 1)])
def test_a_date_and_a_number_make_a_line_in_date_order(day: object) -> None:
    later = "2024-04-01" if isinstance(day, str) else dt.date(2024, 4, 1)
    chart = choose_chart(["day", "logins"], [(later, 5), (day, 2)])
    assert chart.kind == "line" and chart.figure["data"][0]["y"] == [2, 5]
    assert chart.figure["layout"]["xaxis"]["type"] == "date"


def test_a_single_value_is_a_big_number() -> None:
    chart = choose_chart(["count(*)"], [(42,)])
    assert chart.kind == "number" and chart.value == 42 and chart.label == "count(*)" and chart.figure is None


@pytest.mark.parametrize(
    ("columns", "rows"),
    [
        (["email"], [("a@x",), ("b@x",)]),  # no number
        (["email", "name"], [("a@x", "A")]),
        (["name"], [("Ann",)]),  # a single value that is not a number
        (["flag", "other"], [(True, "x")]),  # booleans are not amounts
        (["k", "v"], []),
        (["k", "v"], [(f"k{i}", i) for i in range(51)]),  # too many bars to read
    ],
)
def test_anything_else_is_just_the_table(columns: list[str], rows: list[tuple]) -> None:
    assert choose_chart(columns, rows) is None


CUT_OFFS = VerdictInputs(cut_off="stand-alone", sure=0.9, doubtful=0.3)


@pytest.mark.parametrize(
    ("confidence", "inputs", "words", "level"),
    [
        (0.99, None, "uncalibrated", "warn"),  # a program's own score, which no model turned into a probability
        (0.1, None, "uncalibrated", "warn"),
        (0.95, CUT_OFFS.model_copy(update={"noted": True}), "check this", "warn"),  # a warning: never "likely right"
        (0.95, CUT_OFFS, "likely right", "good"),
        (0.2, CUT_OFFS, "likely wrong", "bad"),
    ],
)
def test_the_page_shows_the_answer_s_verdict(confidence: float, inputs: VerdictInputs | None, words: str,
                                             level: str) -> None:
    answer = Answer(question="q", sql="SELECT 1", status="answered", confidence=confidence, verdict_inputs=inputs,
                    judge_score=0.9)
    view = AnswerView("tiny", "v2", answer, "SELECT 1", None, None)
    assert answer.verdict == words and view.level == level
    assert view.reply().verdict == words and not {"confidence_words", "judge_words"} & set(view.reply().model_dump())


def test_sql_is_formatted_by_sqlglot_and_left_alone_when_it_does_not_parse() -> None:
    assert pretty_sql("select a from t where b=1", "sqlite") == "SELECT\n  a\nFROM t\nWHERE\n  b = 1"
    assert pretty_sql("SELEC nonsense (((", "sqlite") == "SELEC nonsense ((("


def test_serve_beyond_loopback_without_a_token_exits_2_naming_the_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: --host 0.0.0.0 opens the server to other machines: set TEXT2SQL_TOKEN")


def test_serve_on_a_missing_database_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", "/nonexistent/x.sqlite"]) == EXIT_USER_ERROR
    assert "database file not found" in capsys.readouterr().err


def test_serve_is_listed_in_help() -> None:
    out = subprocess.run([sys.executable, "-m", "text2sql_dspy.cli", "serve", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--examples" in out and "--host" in out and "TEXT2SQL_TOKEN" in out
