"""The shipped verifier's cut-offs chosen again on answers it was not fitted on (benchmarks/recut_verifier.py): the
cut-offs by kind as a table, the models kept byte for byte, and the fit's own answers named by their digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import script
from tests.test_fit_verifier import fixture

recut = script("benchmarks/recut_verifier.py")
from text2sql_dspy.optimize import fit_verifier as fit  # noqa: E402

replay = script("benchmarks/replay_training.py")

SINGLE, FIRST_TURN, FOLLOW_UP = {"turn": None}, {"turn": 0}, {"turn": 2}


def answers(*spec: tuple[float, bool, bool, dict]) -> list:
    """(probability, early, right, question) each, ten times over: a cut-off must keep ten answers."""
    return [(replay.Choice(p, early, right), q) for p, early, right, q in spec for _ in range(10)]


@pytest.mark.parametrize(("found", "cuts"), [
    # 9 in 10 right at 0.8 and above (80 + 10 right, 10 wrong at 0.85), none below: cut at 0.8
    (answers((0.9, False, True, SINGLE), (0.85, False, False, SINGLE), *[(0.8, False, True, SINGLE)] * 8,
             (0.5, False, False, SINGLE)),
     {"stand-alone": 0.8}),
    # one more wrong answer at 0.85 and 0.8 keeps 90 right of 110: only the ten at 0.9 are sure
    (answers((0.9, False, True, SINGLE), *[(0.85, False, False, SINGLE)] * 2, *[(0.8, False, True, SINGLE)] * 8),
     {"stand-alone": 0.9}),
    # follow-ups right 7 in 10 at best: never likely right, whatever the stand-alone answers do
    (answers(*[(0.95, False, True, FOLLOW_UP)] * 7, *[(0.95, False, False, FOLLOW_UP)] * 3),
     {"follow-up": recut.NEVER, "stand-alone": recut.NEVER}),
    # each model's answers are cut apart: the early model's at its own probability
    (answers((0.99, True, True, SINGLE), (0.6, False, True, SINGLE)),
     {"stand-alone early": 0.99, "stand-alone": 0.6, "follow-up early": recut.NEVER}),
    # single questions hold at 0.6, a conversation's first turns only at 0.9: the stand-alone cut-off holds for both
    (answers((0.9, False, True, SINGLE), (0.6, False, True, SINGLE), (0.9, False, True, FIRST_TURN),
             (0.6, False, False, FIRST_TURN)),
     {"stand-alone": 0.9}),
])
def test_the_cut_offs_by_kind(found: list, cuts: dict[str, float]) -> None:
    chosen = recut.cut_offs(found)
    assert set(chosen) == {"stand-alone", "stand-alone early", "follow-up", "follow-up early"}
    assert {kind: chosen[kind] for kind in cuts} == pytest.approx(cuts)


def test_the_models_are_kept_and_the_cut_offs_are_chosen_on_the_answers_the_fit_did_not_see(
    tiny_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    singles, turns = fixture(tiny_db, tmp_path)
    roots = ["--data-root", str(tmp_path)]
    assert fit.main([str(singles), *roots, "--out", str(tmp_path / "shipped.json")]) == 0
    args = [str(singles), str(turns), *roots, "--verifier", str(tmp_path / "shipped.json"), "--out",
            str(tmp_path / "recut.json")]
    with pytest.raises(SystemExit, match="name the files it was fitted on"):  # not what it was fitted on
        recut.main([*args, "--fitted-on", str(turns)])
    assert recut.main([*args, "--fitted-on", str(singles)]) == 0
    assert "12 answers over 6 databases" in capsys.readouterr().out
    shipped, found = (json.loads((tmp_path / name).read_text()) for name in ("shipped.json", "recut.json"))
    assert {k: v for k, v in found.items() if k not in ("cut_offs", "fitted_on")} == \
        {k: v for k, v in shipped.items() if k not in ("cut_offs", "fitted_on")}
    assert set(found["cut_offs"]) == {"stand-alone", "stand-alone early", "follow-up", "follow-up early"}
    assert found["fitted_on"]["digest"] == shipped["fitted_on"]["digest"]
    assert (found["fitted_on"]["cut_offs_on"]["questions"], found["fitted_on"]["cut_offs_on"]["turns"]) == (0, 12)
