"""A refit against the shipped verifier on training answers, out of fold (benchmarks/replay_training.py): V2's choice
as a table (the first draft where the early model is sure and it passes, else the likeliest group that passes), and
a run over a small fixture that replays every question."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import script
from tests.test_fit_verifier import fixture

replay = script("benchmarks/replay_training.py")
from text2sql_dspy.optimize import fit_verifier as fit  # noqa: E402


def question(*groups: tuple[bool, bool], early: bool | None = True, early_passed: bool = True) -> dict:
    """A collected question: each group (right, passes: clear of blocking findings and returning rows); the greedy
    draft's row right or wrong as ``early`` (None: no early row)."""
    return {"early": None if early is None else ({}, early), "early_passed": early_passed, "early_noted": False,
            "full": [({}, right) for right, _ in groups], "passed": [passes for _, passes in groups],
            "ranked": [(not passes, False, False) for _, passes in groups], "noted": [False for _ in groups]}


@pytest.mark.parametrize(("found", "early_p", "full_p", "chosen"), [
    (question((False, True), (True, True), early=True), 0.95, [0.9, 0.1], replay.Choice(0.95, True, True)),  # sure
    (question((False, True), (True, True), early=True), 0.5, [0.2, 0.8], replay.Choice(0.8, False, True)),  # sampled
    (question((False, True), (True, True), early_passed=False), 0.95, [0.9, 0.1],  # the sure draft returns nothing
     replay.Choice(0.9, False, False)),
    (question((False, False), (True, True)), 0.5, [0.9, 0.4], replay.Choice(0.4, False, True)),  # blocked loses
    (question((False, False), (True, False)), 0.5, [0.3, 0.6], replay.Choice(0.6, False, True)),  # neither passes
    (question(early=None), None, [], None),  # no reading that ran
])
def test_the_replayed_choice(found: dict, early_p: float | None, full_p: list[float], chosen) -> None:
    assert replay.choose(found, early_p, full_p, early_sure=0.9) == chosen


def test_a_refit_is_replayed_against_the_shipped_file_on_every_question(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, roots = [str(f) for f in fixture(tiny_db, tmp_path)], ["--data-root", str(tmp_path)]
    assert fit.main([*files, *roots, "--out", str(tmp_path / "refit.json")]) == 0
    capsys.readouterr()
    assert replay.main([*files, *roots, "--refit", str(tmp_path / "refit.json"),
                        "--shipped", str(tmp_path / "refit.json")]) == 0
    printed = capsys.readouterr().out
    assert "48 questions and turns over 6 databases" in printed
    assert printed.count(": 48 answers, ") == 2  # the shipped file's replay, and the refit's out of fold
    assert "the refit's choice against the shipped file's:" in printed


@pytest.mark.parametrize(("found", "early_p", "full_p", "noted"), [
    ({**question((True, True), early=True), "early_noted": True, "noted": [False]}, 0.95, [0.9], True),  # the draft's
    ({**question((True, True), (True, True), early=True), "noted": [True, False]}, 0.5, [0.9, 0.8], True),
    ({**question((True, True), (True, True), early=True), "noted": [True, False]}, 0.5, [0.7, 0.8], False),
    (question((True, True), early=True), 0.5, [0.9], False),  # no warning
])
def test_the_replayed_choice_carries_its_warning_which_keeps_it_from_reading_likely_right(
    found: dict, early_p: float, full_p: list[float], noted: bool
) -> None:
    chosen = replay.choose(found, early_p, full_p, early_sure=0.9)
    assert chosen.noted is noted
    assert chosen.likely_right(0.5) is not noted and not chosen.likely_right(0.99)


def test_the_shipped_file_is_scored_out_of_fold_on_the_answers_it_names_and_refused_other_files(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    singles, turns = (str(f) for f in fixture(tiny_db, tmp_path))
    roots = ["--data-root", str(tmp_path)]
    assert fit.main([singles, *roots, "--out", str(tmp_path / "shipped.json")]) == 0
    assert fit.main([singles, turns, *roots, "--out", str(tmp_path / "refit.json")]) == 0
    capsys.readouterr()
    files = [singles, turns, *roots, "--refit", str(tmp_path / "refit.json"),
             "--shipped", str(tmp_path / "shipped.json")]
    assert replay.main([*files, "--shipped-fitted-on", singles]) == 0
    printed = capsys.readouterr().out
    assert "the shipped file scored out of fold on its 36 answers" in printed
    assert printed.count(": 48 answers, ") == 2
    with pytest.raises(SystemExit, match="name the files it was fitted on"):
        replay.main([*files, "--shipped-fitted-on", turns])


def test_out_of_fold_fits_again_only_on_the_rows_the_model_was_fitted_on_and_scores_the_others_as_it_stands() -> None:
    rows = [{"a": float(i % 3), "b": float(i % 2)} for i in range(60)]
    dbs = [f"db{i % 6}" for i in range(60)]
    right = [row["a"] > 0 for row in rows]
    fitted = [db != "db5" for db in dbs]
    model = replay.fit_model(rows, right, ("a", "b"))
    found = replay.out_of_fold(rows, right, dbs, model, fitted)
    assert [found[i] for i in range(60) if not fitted[i]] == [model.probability(r) for r, f in zip(rows, fitted)
                                                              if not f]
    flipped = [not y if not f else y for y, f in zip(right, fitted, strict=True)]  # labels it never saw
    again = replay.out_of_fold(rows, flipped, dbs, model, fitted)
    assert list(again) == list(found)
    assert list(replay.out_of_fold(rows, flipped, dbs, model)) != list(found)  # every row fitted: the labels count
